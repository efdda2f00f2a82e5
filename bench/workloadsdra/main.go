// Command workloadsdra runs one-GPU Jobs through Dynamic Resource Allocation
// and the same Jobs through the NVIDIA device plugin on one testbed in one
// run, and reports the time from the first Job's create to the last Job's
// completion for each, and their ratio. The real kube-scheduler allocates
// the DRA devices and the real controller-manager makes each pod's
// ResourceClaim from the Jobs' ResourceClaimTemplate; kwok runs the pods.
//
// The Jobs are created with client-go (a ResourceClaimTemplate and Jobs
// that reference it), not through gpu_workload: its DRA support was not on
// main when this was written. The DRA nodes' ResourceSlices come from the
// testbed's DRA driver simulator (StartDRADriver: the chart's DeviceClasses
// and kubelet-plugin DaemonSet). Run it with `bash bench/workloads-dra.sh`;
// see bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func main() {
	jobs := flag.Int("jobs", 50, "one-GPU Jobs per path and round")
	rounds := flag.Int("rounds", 3, "rounds; each runs both paths, in alternating order")
	flag.Parse()
	if err := run(*jobs, *rounds); err != nil {
		fmt.Fprintf(os.Stderr, "workloadsdra: %v\n", err)
		os.Exit(1)
	}
}

// The two pools of nodes, told apart by this label.
const (
	poolLabel = "bench.gpuinfra.io/pool"
	poolDP    = "device-plugin"
	poolDRA   = "dra"
)

func run(jobs, rounds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	fmt.Printf("machine: load average %s\n", loadAverage())
	cluster := k8s.New(k8s.Options{Nodes: fleet(jobs)})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{cluster}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()
	client := cluster.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dra-driver"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var draNodes []string
	for _, n := range fleet(jobs) {
		if n.DRA {
			draNodes = append(draNodes, n.Name)
		}
	}
	if err := cluster.StartDRADriver(ctx, "nvidia-dra-driver", map[string]string{k8s.DRANodeLabel: "true"}, draNodes...); err != nil {
		return err
	}

	times := map[string][]time.Duration{}
	for r := range rounds {
		paths := []string{poolDP, poolDRA}
		if r%2 == 1 {
			slices.Reverse(paths)
		}
		for _, path := range paths {
			ns := fmt.Sprintf("bench-%s-%d", path, r)
			took, err := runJobs(ctx, client, ns, path, jobs)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, path, err)
			}
			fmt.Printf("round %d: %d Jobs through %-13s %6.2f s\n", r+1, jobs, path, took.Seconds())
			times[path] = append(times[path], took)
		}
	}
	dp, dra := median(times[poolDP]), median(times[poolDRA])
	fmt.Printf("\nmedian of %d rounds: device plugin %.2f s, DRA %.2f s; DRA takes %.2fx the device plugin's time\n",
		rounds, dp.Seconds(), dra.Seconds(), dra.Seconds()/dp.Seconds())
	return nil
}

// fleet is, per path, enough 8-GPU kwok nodes (p4d.24xlarge) for every Job
// at once and one node more: device-plugin nodes advertise nvidia.com/gpu,
// DRA nodes do not (the testbed's DRA driver simulator publishes their
// GPUs once the driver's kubelet-plugin DaemonSet runs there).
func fleet(jobs int) []k8s.NodeSpec {
	p4d, _ := ec2catalog.Lookup("p4d.24xlarge")
	var nodes []k8s.NodeSpec
	for i := range jobs/8 + 2 {
		nodes = append(nodes,
			k8s.NodeSpec{Name: fmt.Sprintf("bench-dp-%d", i), InstanceType: p4d, ExtraLabels: map[string]string{poolLabel: poolDP}},
			k8s.NodeSpec{Name: fmt.Sprintf("bench-dra-%d", i), InstanceType: p4d, ExtraLabels: map[string]string{poolLabel: poolDRA},
				DRA: true})
	}
	return nodes
}

// runJobs creates a namespace and n one-GPU Jobs in it through path, and
// returns the time from the first create until every Job is Complete.
func runJobs(ctx context.Context, client kubernetes.Interface, ns, path string, n int) (time.Duration, error) {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	start := time.Now()
	pod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{poolLabel: path},
		Tolerations:   []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Containers:    []corev1.Container{{Name: "cuda", Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}},
	}
	if path == poolDRA {
		_, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
					DeviceClassName: nvdra.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				}}},
			}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("creating the ResourceClaimTemplate: %w", err)
		}
		pod.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
		pod.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	} else {
		pod.Containers[0].Resources.Limits = corev1.ResourceList{gpulabels.ResourceName: resource.MustParse("1")}
	}
	for i := range n {
		_, err := client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%03d", i)},
			Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: pod}},
		}, metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("creating Job %d: %w", i, err)
		}
	}
	if err := awaitJobsComplete(ctx, client, ns, n); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// awaitJobsComplete watches the namespace's Jobs until n are Complete; a
// failed Job ends the wait with an error.
func awaitJobsComplete(ctx context.Context, client kubernetes.Interface, ns string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	jobs := client.BatchV1().Jobs(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return jobs.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return jobs.Watch(ctx, o) },
	}
	complete := map[string]bool{}
	record := func(job *batchv1.Job) error {
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				complete[job.Name] = true
			case batchv1.JobFailed:
				return fmt.Errorf("job %s/%s failed: %s", ns, job.Name, c.Message)
			}
		}
		return nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &batchv1.Job{}, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			job, ok := o.(*batchv1.Job)
			if !ok {
				return false, fmt.Errorf("watching Jobs: got a %T", o)
			}
			if err := record(job); err != nil {
				return false, err
			}
		}
		return len(complete) >= n, nil
	}, func(ev watch.Event) (bool, error) {
		if job, ok := ev.Object.(*batchv1.Job); ok {
			if err := record(job); err != nil {
				return false, err
			}
		}
		return len(complete) >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Jobs of %s to complete (%d did): %w", n, ns, len(complete), err)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(b) < 14 {
		return "unknown"
	}
	return string(b[:14])
}

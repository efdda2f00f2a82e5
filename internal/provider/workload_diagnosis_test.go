package provider

// Acceptance tests of issue 12's diagnoses through the Terraform CLI: what
// gpu_workload says when its pods cannot all run must be true in every
// variant. A Deployment with more replicas than its nodes can ever hold
// fails at once and says so; one whose GPUs other work holds waits; a Job
// with more parallelism than GPUs runs in waves; GPU nodes without a device
// plugin are named as such; the nodes that come closest are listed first.

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// diagnosisWorkload is a gpu_workload "w" of kind in namespace with the
// given gpu block body and extra top-level settings. Its create timeout is
// 10 minutes unless extra sets one: a diagnosis that must come at once
// cannot come from the timeout.
func diagnosisWorkload(namespace, kind, gpuBlock, extra string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "w" {
  kind = %q
  metadata {
    name      = "w"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
%s
  }
%s
}
`, kind, namespace, gpuBlock, extra)
}

const longCreateTimeout = `
  timeouts {
    create = "10m"
  }`

// diagnosisTestNodes registers nodes for one test, waits until they take
// pods, and deletes them when the test ends, so that the rest of the
// package sees its usual fleet.
func diagnosisTestNodes(t *testing.T, specs ...k8s.NodeSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for _, spec := range specs {
		require.NoError(t, cluster.AddNode(ctx, spec))
		names = append(names, spec.Name)
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), spec.Name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))
}

// testAccCreateFails applies config, a fresh workload, in a test case of its
// own and expects the create to fail with an error matching want; the case
// then destroys it.
func testAccCreateFails(t *testing.T, namespace, config string, want *regexp.Regexp) {
	t.Helper()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: config, ExpectError: want}},
		CheckDestroy:             testAccCheckWorkloadsGone(namespace),
	})
}

func TestAccWorkload_deploymentBeyondCapacityFailsFast(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-beyond")
	deployment := func(gpuBlock string, replicas int) string {
		return diagnosisWorkload(ns, "deployment", gpuBlock, fmt.Sprintf(`
  deployment {
    replicas = %d
  }`, replicas)+longCreateTimeout)
	}
	// Three A10G replicas, two A10Gs in the cluster: two run and hold them
	// for good; the third can never run. It fails at once, not at the
	// 10-minute timeout, which would say "did not finish in time".
	testAccCreateFails(t, ns, deployment(`
    count    = 1
    products = ["NVIDIA-A10G"]`, 3),
		wrapped("cannot be scheduled: deployment.replicas is 3, but the nodes its pods can use hold at most 2 replicas of 1 nvidia.com/gpu at once, "+
			"even with every GPU free (gpu-g5-0: 1, gpu-g5-1: 1), so 1 replica can never be scheduled.",
			"The scheduler says: 0/6 nodes are available",
			"Lower deployment.replicas to 2 or fewer"))
	// Per-node packing: the one H100 node has 8 GPUs, which hold two pods
	// of 3 GPUs, not 8/3.
	testAccCreateFails(t, ns, deployment(`
    count    = 3
    products = ["NVIDIA-H100-80GB-HBM3"]`, 3),
		wrapped("deployment.replicas is 3, but the nodes its pods can use hold at most 2 replicas of 3 nvidia.com/gpu at once, "+
			"even with every GPU free (gpu-p5-0: 2 (8 nvidia.com/gpu allocatable)), so 1 replica can never be scheduled.",
			"Lower deployment.replicas to 2 or fewer"))
	// As many replicas as the nodes hold: it rolls out.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: deployment(`
    count    = 1
    products = ["NVIDIA-A10G"]`, 2),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_workload.w", tfjsonpath.New("status"), knownvalue.StringExact("Available")),
			},
		}},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_deploymentWaitsForGPUsOtherWorkHolds(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-held")
	// Another pod holds one of the two A10Gs: the second replica runs once
	// it is freed, so the wait goes on to the timeout and says so.
	holdAllGPUs(t, ns, "gpu-g5-0", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: diagnosisWorkload(ns, "deployment", `
    count    = 1
    products = ["NVIDIA-A10G"]`, `
  deployment {
    replicas = 2
  }
  timeouts {
    create = "15s"
  }`),
			ExpectError: wrapped("the rollout did not finish in time", "unschedulable",
				"2 lack nvidia.com/gpu ≥ 1 free (gpu-g5-0: 0 free, gpu-g5-1: 0 free)",
				"Nodes that match are busy: it runs once GPUs are freed on gpu-g5-0, gpu-g5-1, or raise the timeout."),
		}},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_jobBeyondCapacityRunsInWaves(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-waves")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// Three pods at once on two A10Gs: the third waits for one of
			// the first two to finish; no error.
			Config: diagnosisWorkload(ns, "job", `
    count    = 1
    products = ["NVIDIA-A10G"]`, `
  job {
    parallelism = 3
    completions = 3
  }`+longCreateTimeout),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_workload.w", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
			},
			Check: func(*terraform.State) error {
				job, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "w", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if job.Status.Succeeded != 3 {
					return fmt.Errorf("%d pods succeeded, want 3", job.Status.Succeeded)
				}
				return nil
			},
		}},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_gpuNodesWithoutDevicePluginAreNamed(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-noplugin")
	label := map[string]string{"gpu-test": "noplugin"}
	withLabels := func(extra map[string]string) map[string]string {
		out := map[string]string{"gpu-test": "noplugin"}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	// Three GPU nodes no device plugin serves, known by GFD's labels, by
	// NFD's PCI label, and by the instance type alone.
	diagnosisTestNodes(t,
		k8s.NodeSpec{Name: "wl-noplugin-gfd", InstanceType: instanceType(t, "g5.xlarge"), WithoutGPUCapacity: true, GFDLabeled: true, ExtraLabels: label},
		k8s.NodeSpec{Name: "wl-noplugin-nfd", InstanceType: instanceType(t, "g5.xlarge"), WithoutGPUCapacity: true,
			ExtraLabels: withLabels(map[string]string{gpulabels.NFDPCIPresent: "true"})},
		k8s.NodeSpec{Name: "wl-noplugin-type", InstanceType: instanceType(t, "g4dn.xlarge"), WithoutGPUCapacity: true, ExtraLabels: label},
	)
	job := func(extra string) string {
		return diagnosisWorkload(ns, "job", "    count = 1", `
  node_selector = { "gpu-test" = "noplugin" }`+extra)
	}
	// No plugin runs on any of them: it fails at once and says how to
	// deploy one.
	testAccCreateFails(t, ns, job(longCreateTimeout),
		wrapped("no node can ever run it as written: 0 of 9 nodes can run it",
			"3 are GPU nodes where no NVIDIA device plugin runs, so they advertise no nvidia.com/gpu (wl-noplugin-gfd: nvidia.com/gpu.product=NVIDIA-A10G, "+
				"wl-noplugin-nfd: feature.node.kubernetes.io/pci-10de.present=true, wl-noplugin-type: instance type g4dn.xlarge (1 Tesla-T4))",
			"No NVIDIA device plugin runs on 3 GPU nodes (wl-noplugin-gfd, wl-noplugin-nfd, wl-noplugin-type). "+
				"Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on."))
	// A device plugin pod starts on one of them (one that never advertises
	// anything): waiting can help, so it waits, and at the timeout says
	// what for.
	startSilentDevicePlugin(t, ns, "wl-noplugin-type")
	testAccCreateFails(t, ns, job(`
  timeouts {
    create = "10s"
  }`),
		wrapped("the Job did not complete in time",
			"1 runs a device plugin pod but advertises no nvidia.com/gpu yet (wl-noplugin-type: "+ns+"/holder-device-plugin)",
			"It can run once the device plugin on wl-noplugin-type advertises GPUs, or raise the timeout."))
}

// startSilentDevicePlugin runs, on node, a pod that mounts the kubelet's
// device-plugins directory as every device plugin does, but is no NVIDIA
// plugin the testbed's simulator answers to: it never advertises GPUs. Its
// name starts with holder-, which testAccCheckWorkloadsGone leaves alone.
func startSilentDevicePlugin(t *testing.T, namespace, node string) {
	t.Helper()
	_, err := cluster.Client().CoreV1().Pods(namespace).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "holder-device-plugin"},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "plugin", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "device-plugins", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/device-plugins"},
			}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestAccWorkload_sharedAndMIGReplicasBeyondCapacity(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-sharing")
	// A T4 time-sliced 4 ways (renamed to nvidia.com/gpu.shared, product
	// labeled -SHARED) and an A100 node split into 56 MIG 1g.5gb instances
	// (mixed strategy: no nvidia.com/gpu).
	diagnosisTestNodes(t,
		k8s.NodeSpec{Name: "wl-sharing-t4", InstanceType: instanceType(t, "g4dn.xlarge"), WithoutGPUCapacity: true, GFDLabeled: true,
			ExtraLabels: map[string]string{"gpu-test": "sharing", gpulabels.Product: "Tesla-T4-SHARED", gpulabels.Replicas: "4"},
			Resources:   corev1.ResourceList{gpulabels.SharedResourceName: k8sresource.MustParse("4")}},
		k8s.NodeSpec{Name: "wl-sharing-a100", InstanceType: instanceType(t, "p4d.24xlarge"), WithoutGPUCapacity: true, GFDLabeled: true,
			ExtraLabels: map[string]string{"gpu-test": "sharing", gpulabels.MIGStrategy: "mixed"},
			Resources:   corev1.ResourceList{"nvidia.com/mig-1g.5gb": k8sresource.MustParse("56")}},
	)
	deployment := func(gpuBlock string, replicas int) string {
		return diagnosisWorkload(ns, "deployment", gpuBlock, fmt.Sprintf(`
  node_selector = { "gpu-test" = "sharing" }
  deployment {
    replicas = %d
  }`, replicas)+longCreateTimeout)
	}
	testAccCreateFails(t, ns, deployment(`
    count    = 1
    shared   = true
    products = ["Tesla-T4"]`, 5),
		wrapped("deployment.replicas is 5, but the nodes its pods can use hold at most 4 replicas of 1 nvidia.com/gpu.shared at once, "+
			"even with every GPU free (wl-sharing-t4: 4), so 1 replica can never be scheduled.",
			"Lower deployment.replicas to 4 or fewer"))
	testAccCreateFails(t, ns, deployment(`
    count       = 8
    mig_profile = "1g.5gb"`, 8),
		wrapped("deployment.replicas is 8, but the nodes its pods can use hold at most 7 replicas of 8 nvidia.com/mig-1g.5gb at once, "+
			"even with every GPU free (wl-sharing-a100: 7 (56 nvidia.com/mig-1g.5gb allocatable)), so 1 replica can never be scheduled.",
			"Lower deployment.replicas to 7 or fewer"))
}

func TestAccWorkload_tooManyGPUsListsTheLargestNodesFirst(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-largest")
	// Three more 1-GPU nodes whose names sort before every other: the
	// 8-GPU nodes must still be named, first.
	var specs []k8s.NodeSpec
	for i := range 3 {
		specs = append(specs, k8s.NodeSpec{Name: fmt.Sprintf("gpu-a-%d", i), InstanceType: instanceType(t, "g5.xlarge"), GFDLabeled: true})
	}
	diagnosisTestNodes(t, specs...)
	testAccCreateFails(t, ns, diagnosisWorkload(ns, "job", "    count = 16", longCreateTimeout),
		wrapped("no node can ever run it as written: 0 of 9 nodes can run it: 1 has no NVIDIA GPU (cpu-0), "+
			"8 have fewer than 16 nvidia.com/gpu allocatable in all (gpu-p4d-0: 8, gpu-p5-0: 8, gpu-a-0: 1, gpu-a-1: 1, gpu-a-2: 1 and 3 more)"))
}

func TestAccWorkload_cordonedNodeCountsOnlyOnceUncordoned(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-cordon")
	// Two A10G nodes of the test's own, one of them cordoned.
	label := map[string]string{"gpu-test": "cordon"}
	diagnosisTestNodes(t,
		k8s.NodeSpec{Name: "wl-cordon-g5-0", InstanceType: instanceType(t, "g5.xlarge"), GFDLabeled: true, ExtraLabels: label},
		k8s.NodeSpec{Name: "wl-cordon-g5-1", InstanceType: instanceType(t, "g5.xlarge"), GFDLabeled: true, ExtraLabels: label},
	)
	_, err := cluster.Client().CoreV1().Nodes().Patch(context.Background(), "wl-cordon-g5-1", types.StrategicMergePatchType,
		[]byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	deployment := func(replicas int, timeout string) string {
		return diagnosisWorkload(ns, "deployment", "    count = 1", fmt.Sprintf(`
  node_selector = { "gpu-test" = "cordon" }
  deployment {
    replicas = %d
  }
  timeouts {
    create = %q
  }`, replicas, timeout))
	}
	// Three replicas exceed the two nodes even once the cordon is lifted:
	// it fails at once.
	testAccCreateFails(t, ns, deployment(3, "10m"),
		wrapped("deployment.replicas is 3, but the nodes its pods can use hold at most 2 replicas of 1 nvidia.com/gpu at once, "+
			"even with every GPU free (wl-cordon-g5-0: 1, wl-cordon-g5-1: 1 (cordoned)), so 1 replica can never be scheduled."))
	// Two fit once the cordon is lifted: it waits, and says for what.
	testAccCreateFails(t, ns, deployment(2, "10s"),
		wrapped("the rollout did not finish in time", "1 is cordoned (wl-cordon-g5-1)",
			"The nodes that take pods now hold 1 of its 2 replicas (wl-cordon-g5-0: 1, wl-cordon-g5-1: 1 (cordoned)); "+
				"the rest run once wl-cordon-g5-1 (cordoned) takes pods again, or raise the timeout."))
}

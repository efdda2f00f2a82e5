// Command workloadsbench measures `terraform apply` of many one-GPU
// gpu_workload Jobs, and `terraform plan` with them in state, for two builds
// of the provider on one testbed in one run: this tree, and a baseline built
// from another commit (a git worktree). Per run it reports the wall time,
// the API server's read requests by verb and resource (its
// apiserver_request_total metric, before and after), the most WATCH
// requests open at once (apiserver_longrunning_requests, sampled) beyond
// those open before the run, and the provider processes' peak resident
// memory (VmHWM). Run it with `bash bench/workloads.sh`; see bench/README.md.
//
// The metrics count every client of the API server. The controllers,
// scheduler and kwok read through informers started before the run, so the
// GET, LIST and WATCH requests a run adds are the provider's, except the
// scheduler's and kwok's few; writes (the Jobs' status, pod bindings) are
// everyone's and are not reported.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func main() {
	base := flag.String("base", "ae8e146", "git ref of the baseline provider")
	small := flag.Int("small", 20, "Jobs applied with Terraform's default parallelism")
	large := flag.Int("large", 200, "Jobs applied with -parallelism=50, then planned with in state")
	flag.Parse()
	if err := run(*base, *small, *large); err != nil {
		fmt.Fprintf(os.Stderr, "workloadsbench: %v\n", err)
		os.Exit(1)
	}
}

// provider is one build under test.
type provider struct{ name, pluginDir string }

func run(base string, small, large int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	bins, err := testbed.Binaries()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpu-workloadsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	current := provider{"this tree", filepath.Join(work, "current")}
	baseline := provider{"baseline " + base, filepath.Join(work, "baseline")}
	fmt.Println("building the provider, and the baseline from", base)
	if err := build(ctx, ".", current.pluginDir); err != nil {
		return err
	}
	tree := filepath.Join(work, "base-tree")
	if err := command(ctx, "", "git", "worktree", "add", "--detach", tree, base); err != nil {
		return err
	}
	defer func() { _ = command(context.Background(), "", "git", "worktree", "remove", "--force", tree) }()
	if err := build(ctx, tree, baseline.pluginDir); err != nil {
		return err
	}

	fmt.Println("starting the testbed")
	cluster := k8s.New(k8s.Options{Nodes: fleet(large)})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{cluster}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()

	var results []result
	for _, p := range []provider{baseline, current} {
		for _, s := range []scenario{
			{jobs: small, parallelism: 0},
			{jobs: large, parallelism: 50, plan: true},
		} {
			ns := fmt.Sprintf("bench-%d-%d", len(results), s.jobs)
			if _, err := cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			tf := terraformRun{binary: bins.Terraform, dir: filepath.Join(work, ns), pluginDir: p.pluginDir}
			if err := tf.writeConfig(cluster.KubeconfigPath(), ns, s.jobs); err != nil {
				return err
			}
			args := []string{"apply", "-auto-approve", "-input=false"}
			if s.parallelism > 0 {
				args = append(args, fmt.Sprintf("-parallelism=%d", s.parallelism))
			}
			r, err := measure(ctx, cluster, tf, args)
			if err != nil {
				return err
			}
			r.provider, r.what = p.name, fmt.Sprintf("apply %d Jobs (parallelism %s)", s.jobs, parallelismName(s.parallelism))
			report(r, s.jobs)
			results = append(results, r)
			if s.plan {
				r, err := measure(ctx, cluster, tf, []string{"plan", "-input=false", "-detailed-exitcode"})
				if err != nil {
					return err
				}
				r.provider, r.what = p.name, fmt.Sprintf("plan, %d Jobs in state", s.jobs)
				report(r, s.jobs)
				results = append(results, r)
			}
		}
	}
	summary(results)
	return nil
}

type scenario struct {
	jobs, parallelism int
	plan              bool
}

func parallelismName(p int) string {
	if p == 0 {
		return "default 10"
	}
	return fmt.Sprint(p)
}

// fleet is enough 8-GPU kwok nodes, GPUs advertised, for every Job of the
// largest run at once, and one more.
func fleet(jobs int) []k8s.NodeSpec {
	p4d, _ := ec2catalog.Lookup("p4d.24xlarge")
	var nodes []k8s.NodeSpec
	for i := range jobs/8 + 2 {
		nodes = append(nodes, k8s.NodeSpec{Name: fmt.Sprintf("bench-gpu-%d", i), InstanceType: p4d, GFDLabeled: true})
	}
	return nodes
}

func build(ctx context.Context, dir, pluginDir string) error {
	out, err := filepath.Abs(filepath.Join(pluginDir, "terraform-provider-gpu"))
	if err != nil {
		return err
	}
	return command(ctx, dir, "go", "build", "-o", out, ".")
}

func command(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}

// Command inventoryplanbench measures `terraform plan` of a gpu_inventory
// over a large kwok fleet, in one run against one in-process testbed:
// the default (no labels), include_labels of a few keys, and every label
// (`include_labels = ["*"]`, what every plan carried before labels were
// opt-in); the provider's own time inside each plan (its debug log lines)
// against the rest; the provider process's peak RSS; the API requests per
// read (the API server's apiserver_request_total); and `kubectl get nodes
// -o json` on the same cluster as the baseline. Run it with
// `bash bench/inventory-plan.sh`; see bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func main() {
	if os.Getenv(wrapEnv) != "" {
		os.Exit(wrapProvider())
	}
	nodes := flag.Int("nodes", 5000, "kwok GPU nodes")
	pods := flag.Int("pods", 1000, "pods holding one GPU each, bound to the nodes")
	runs := flag.Int("runs", 3, "runs of each variant")
	flag.Parse()
	if err := run(*nodes, *pods, *runs); err != nil {
		fmt.Fprintf(os.Stderr, "inventoryplanbench: %v\n", err)
		os.Exit(1)
	}
}

func run(nodes, pods, runs int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bins, err := testbed.Binaries()
	if err != nil {
		return err
	}
	kubectl, err := kubectlBinary(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpu-inventoryplanbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	fmt.Println("building the provider")
	realProvider := filepath.Join(work, "provider", "terraform-provider-gpu")
	if err := benchtf.BuildProvider(ctx, realProvider, "CGO_ENABLED=0"); err != nil {
		return err
	}
	pluginDir, err := writeProviderWrapper(work, realProvider)
	if err != nil {
		return err
	}

	fmt.Println("starting the testbed")
	cluster := k8s.New(k8s.Options{})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{cluster}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()
	started := time.Now()
	if err := createFleet(ctx, cluster, nodes, pods); err != nil {
		return err
	}
	fmt.Printf("registered %d GPU nodes and %d GPU pods in %.0f s\n", nodes, pods, time.Since(started).Seconds())

	var results []result
	for round := range runs {
		for _, v := range variants {
			tf := terraformPlan{binary: bins.Terraform, dir: filepath.Join(work, v.name), pluginDir: pluginDir, work: work}
			if round == 0 {
				if err := tf.writeConfig(cluster.KubeconfigPath(), v.arguments); err != nil {
					return err
				}
			}
			before, err := inventoryListRequests(ctx, cluster.Client())
			if err != nil {
				return err
			}
			r, err := tf.run(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			after, err := inventoryListRequests(ctx, cluster.Client())
			if err != nil {
				return err
			}
			r.variant, r.requests = v.name, after-before
			results = append(results, r)
			fmt.Println(r)
		}
		r, err := kubectlGetNodes(ctx, kubectl, cluster.KubeconfigPath())
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Println(r)
	}
	report(os.Stdout, results, nodes, pods)
	return nil
}

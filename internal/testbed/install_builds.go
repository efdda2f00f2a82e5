package testbed

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Set names the builds one make target needs, so that `make demo` waits
// only for what it runs.
type Set string

const (
	// SetDemo is what `make demo` runs: etcd and the control plane, kwok
	// and the Terraform CLI.
	SetDemo Set = "demo"
	// SetTest is everything `make test` needs: the demo set, OpenTofu (the
	// acceptance tests' second CLI) and Packer (make validate-examples).
	SetTest Set = "test"
)

// noDebugInfo links the testbed's programs without DWARF and symbol table
// (-s -w): nobody debugs them, stack traces still name functions, and the
// linker does about half the work (kube-apiserver: 11 s of CPU with DWARF,
// 6 s without, measured here).
const noDebugInfo = "-s -w"

// buildStep builds the binaries of one version-keyed cache directory with a
// single `go install`. The three Kubernetes binaries are one step: one go
// command compiles the packages they share once, where three would compile
// them three times.
type buildStep struct {
	name     string   // what --only takes: kube, kwok, terraform, tofu, packer, kube-oldest
	title    string   // what the progress line says
	sets     []Set    // the sets it belongs to
	dir      string   // the cache directory the binaries end up in
	binaries []string // file names go install writes to GOBIN
	goArgs   []string // arguments to the go command
	// firstBuild is how long the step took from empty Go caches on a
	// 2-core machine, for the first-run estimate (see README.md, "First run").
	firstBuild time.Duration
}

// buildSteps is the testbed's table of builds under the cache root: the
// Kubernetes control plane from the module in <toolsDir>/kube (it pins
// k8s.io/kubernetes), OpenTofu from <toolsDir>/tofu, Packer from
// <toolsDir>/packer, kwok and Terraform from the Go module proxy, and the
// oldest supported Kubernetes from <toolsDir>/kube-oldest. The two
// Kubernetes builds, the longest, come first, so that a pool starts them
// first.
func buildSteps(root, toolsDir string) []buildStep {
	tofuModule := filepath.Join(toolsDir, "tofu")
	packerModule := filepath.Join(toolsDir, "packer")
	return []buildStep{
		kubeStep("kube", KubernetesVersion, toolsDir, []Set{SetDemo, SetTest}, root, 7*time.Minute),
		// The oldest supported Kubernetes, which make test runs the
		// Kubernetes tests against too; make demo runs only the newest.
		// Second, so that a pool of two starts both long builds first and
		// the short ones fill in after: a Kubernetes build keeps 1.35 of 2
		// cores busy on average (v1.37.2: 13:39 of CPU in 10:08, measured
		// here), so the other core has room, and a long build started last
		// would run alone at the end.
		kubeStep("kube-oldest", OldestKubernetesVersion, toolsDir, []Set{SetTest}, root, 8*time.Minute),
		{
			name:       "terraform",
			title:      "Terraform " + TerraformVersion,
			sets:       []Set{SetDemo, SetTest},
			dir:        terraformBinDir(root),
			binaries:   []string{"terraform"},
			goArgs:     []string{"install", "-ldflags", noDebugInfo, "github.com/hashicorp/terraform@" + TerraformVersion},
			firstBuild: 3 * time.Minute,
		},
		{
			name:       "kwok",
			title:      "kwok " + KwokVersion,
			sets:       []Set{SetDemo, SetTest},
			dir:        kwokBinDir(root),
			binaries:   []string{"kwok"},
			goArgs:     []string{"install", "-ldflags", noDebugInfo, "sigs.k8s.io/kwok/cmd/kwok@" + KwokVersion},
			firstBuild: 1 * time.Minute,
		},
		{
			// A module of its own: OpenTofu replaces hcl/v2 with its fork,
			// and `go install pkg@version` refuses modules with replaces.
			name:     "tofu",
			title:    "OpenTofu " + TofuVersion,
			sets:     []Set{SetTest},
			dir:      tofuBinDir(root),
			binaries: []string{"tofu"},
			goArgs: []string{"-C", tofuModule, "install", "-ldflags", "-X github.com/opentofu/opentofu/version.dev=no " + noDebugInfo,
				"github.com/opentofu/opentofu/cmd/tofu"},
			firstBuild: 5 * time.Minute,
		},
		{
			// Not run by the testbed: it validates examples/packer. A module
			// of its own: `go install github.com/hashicorp/packer@v1.9.4`
			// is refused (the proxy has no version list for Packer), and
			// old dependencies can be raised there if a Go release breaks them.
			name:       "packer",
			title:      "Packer " + PackerVersion,
			sets:       []Set{SetTest},
			dir:        packerBinDir(root),
			binaries:   []string{"packer"},
			goArgs:     []string{"-C", packerModule, "install", "-ldflags", noDebugInfo, "github.com/hashicorp/packer"},
			firstBuild: 5 * time.Minute,
		},
	}
}

// kubeStep builds one Kubernetes release's kube-apiserver,
// kube-controller-manager and kube-scheduler, and etcd's server at the
// version that release pins, from the tools module <toolsDir>/<name> (it
// pins k8s.io/kubernetes at version) into kube-<version> under the cache.
// etcd is one of its packages: most of what it compiles (gRPC, the etcd
// client) is shared with kube-apiserver, so one go command builds it for
// little.
func kubeStep(name, version, toolsDir string, sets []Set, root string, firstBuild time.Duration) buildStep {
	module := filepath.Join(toolsDir, name)
	title := "Kubernetes " + version + " and etcd"
	if version == OldestKubernetesVersion {
		title = "Kubernetes " + version + " (the oldest supported) and etcd"
	}
	return buildStep{
		name:     name,
		title:    title,
		sets:     sets,
		dir:      kubeBinDir(root, version),
		binaries: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"},
		goArgs: []string{"-C", module, "install", "-ldflags", kubeVersionLDFlags(version) + " " + noDebugInfo,
			"k8s.io/kubernetes/cmd/kube-apiserver",
			"k8s.io/kubernetes/cmd/kube-controller-manager",
			"k8s.io/kubernetes/cmd/kube-scheduler",
			toolsModulePath + "/" + name + "/etcd",
		},
		firstBuild: firstBuild,
	}
}

// toolsModulePath is the import path the tools modules' paths start with.
const toolsModulePath = "github.com/gpuinfra/terraform-provider-gpu/tools"

// selectSteps keeps the steps that only names: each a set ("demo",
// "test") or a step's name ("kube", "tofu"); none means the test set, which
// is every step. The table's order is kept. An unknown name is an error
// that lists the known ones.
func selectSteps(steps []buildStep, only []string) ([]buildStep, error) {
	if len(only) == 0 {
		only = []string{string(SetTest)}
	}
	wanted := map[string]bool{}
	for _, name := range only {
		name = strings.TrimSpace(name)
		known := name == string(SetDemo) || name == string(SetTest)
		for _, step := range steps {
			if step.name == name {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("--only: unknown build %q; valid values are the sets %q and %q, or the builds %s",
				name, SetDemo, SetTest, strings.Join(stepNames(steps), ", "))
		}
		wanted[name] = true
	}
	var selected []buildStep
	for _, step := range steps {
		keep := wanted[step.name]
		for _, set := range step.sets {
			keep = keep || wanted[string(set)]
		}
		if keep {
			selected = append(selected, step)
		}
	}
	return selected, nil
}

func stepNames(steps []buildStep) []string {
	names := make([]string, 0, len(steps))
	for _, step := range steps {
		names = append(names, step.name)
	}
	return names
}

package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildStep builds the binaries of one version-keyed cache directory with a
// single `go install`.
type buildStep struct {
	name     string
	dir      string   // the cache directory the binaries end up in
	binaries []string // file names go install writes to GOBIN
	goArgs   []string // arguments to the go command
}

// Install builds every testbed binary missing from the cache with the Go
// toolchain: the Kubernetes control plane from the module in
// <toolsDir>/kube (it pins k8s.io/kubernetes), OpenTofu from <toolsDir>/tofu,
// Packer from <toolsDir>/packer, kwok and Terraform from the Go module proxy.
// Binaries already present are not rebuilt. Each build goes
// to a temporary directory first and is renamed into place, so a half-built
// binary is never taken for a present one. The go command's output goes to
// out.
func Install(ctx context.Context, toolsDir string, out io.Writer) error {
	root, err := CacheRoot()
	if err != nil {
		return err
	}
	kubeModule, err := filepath.Abs(filepath.Join(toolsDir, "kube"))
	if err != nil {
		return fmt.Errorf("resolving the tools directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(kubeModule, "go.mod")); err != nil {
		return fmt.Errorf("finding the Kubernetes tools module (pass --tools-dir): %w", err)
	}
	tofuModule := filepath.Join(filepath.Dir(kubeModule), "tofu")
	packerModule := filepath.Join(filepath.Dir(kubeModule), "packer")

	steps := []buildStep{
		{
			name:     "Kubernetes " + KubernetesVersion,
			dir:      kubeBinDir(root),
			binaries: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"},
			goArgs: []string{"-C", kubeModule, "install", "-ldflags", kubeVersionLDFlags(),
				"k8s.io/kubernetes/cmd/kube-apiserver",
				"k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler",
			},
		},
		{
			name:     "kwok " + KwokVersion,
			dir:      kwokBinDir(root),
			binaries: []string{"kwok"},
			goArgs:   []string{"install", "sigs.k8s.io/kwok/cmd/kwok@" + KwokVersion},
		},
		{
			name:     "Terraform " + TerraformVersion,
			dir:      terraformBinDir(root),
			binaries: []string{"terraform"},
			goArgs:   []string{"install", "github.com/hashicorp/terraform@" + TerraformVersion},
		},
		{
			// A module of its own: OpenTofu replaces hcl/v2 with its fork,
			// and `go install pkg@version` refuses modules with replaces.
			name:     "OpenTofu " + TofuVersion,
			dir:      tofuBinDir(root),
			binaries: []string{"tofu"},
			goArgs: []string{"-C", tofuModule, "install", "-ldflags", "-X github.com/opentofu/opentofu/version.dev=no",
				"github.com/opentofu/opentofu/cmd/tofu"},
		},
		{
			// Not run by the testbed: it validates examples/packer. A module
			// of its own: `go install github.com/hashicorp/packer@v1.9.4`
			// is refused (the proxy has no version list for Packer), and
			// old dependencies can be raised there if a Go release breaks them.
			name:     "Packer " + PackerVersion,
			dir:      packerBinDir(root),
			binaries: []string{"packer"},
			goArgs:   []string{"-C", packerModule, "install", "github.com/hashicorp/packer"},
		},
	}
	for _, step := range steps {
		if err := step.run(ctx, root, out); err != nil {
			return err
		}
	}
	return nil
}

// kubeVersionLDFlags stamps the version the way Kubernetes' own build does,
// so /version and `kubectl version` report KubernetesVersion rather than
// v0.0.0-master.
func kubeVersionLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	values := map[string]string{
		"gitVersion":   KubernetesVersion,
		"gitMajor":     major,
		"gitMinor":     minor,
		"gitTreeState": "clean",
	}
	flags := []string{"-s", "-w"}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, key := range []string{"gitVersion", "gitMajor", "gitMinor", "gitTreeState"} {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, key, values[key]))
		}
	}
	return strings.Join(flags, " ")
}

func (s buildStep) present() bool {
	for _, bin := range s.binaries {
		if !isExecutable(filepath.Join(s.dir, bin)) {
			return false
		}
	}
	return true
}

func (s buildStep) run(ctx context.Context, root string, out io.Writer) error {
	if s.present() {
		fmt.Fprintf(out, "%s: already built in %s\n", s.name, s.dir)
		return nil
	}
	binRoot := filepath.Join(root, "bin")
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return fmt.Errorf("creating the cache directory: %w", err)
	}
	// Same file system as the destination, so the final rename is atomic.
	staging, err := os.MkdirTemp(binRoot, ".building-")
	if err != nil {
		return fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(staging)

	fmt.Fprintf(out, "%s: building (go %s)\n", s.name, strings.Join(s.goArgs, " "))
	cmd := exec.CommandContext(ctx, "go", s.goArgs...)
	cmd.Env = append(os.Environ(), "GOBIN="+staging, "GOWORK=off")
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", s.name, err)
	}

	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", s.dir, err)
	}
	for _, bin := range s.binaries {
		if err := os.Rename(filepath.Join(staging, bin), filepath.Join(s.dir, bin)); err != nil {
			return fmt.Errorf("moving %s into the cache: %w", bin, err)
		}
	}
	fmt.Fprintf(out, "%s: installed in %s\n", s.name, s.dir)
	return nil
}

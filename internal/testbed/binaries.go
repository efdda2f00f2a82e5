package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinaryPaths are the programs the testbed's backends run, plus the
// Terraform and OpenTofu CLIs the acceptance tests drive.
type BinaryPaths struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	Terraform             string
	Tofu                  string // OpenTofu, the other CLI the acceptance tests run under
}

// MissingBinariesError lists every binary that was looked for and not found.
type MissingBinariesError struct {
	Missing []string // "name (where it was looked for)"
}

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("testbed binaries missing: %s; run `make testbed` to build them",
		strings.Join(e.Missing, ", "))
}

// Binaries resolves the path of every binary: the etcd, Kubernetes, kwok
// and Terraform builds in the cache (see CacheRoot), or the etcd that
// $GPU_TESTBED_ETCD names. The Kubernetes release is the one
// $GPU_TESTBED_KUBERNETES chooses (see ChosenKubernetesVersion). The error,
// a *MissingBinariesError, names every one that is missing.
func Binaries() (BinaryPaths, error) {
	version, err := ChosenKubernetesVersion()
	if err != nil {
		return BinaryPaths{}, err
	}
	paths, err := locateBinaries(version)
	if err != nil {
		return BinaryPaths{}, err
	}
	return paths, paths.check(true)
}

// KubernetesBinaries is Binaries for the Kubernetes release version (one of
// KubernetesVersion and OldestKubernetesVersion), without requiring the
// Terraform and OpenTofu CLIs: what the Kubernetes backend runs.
func KubernetesBinaries(version string) (BinaryPaths, error) {
	if KubernetesChoice(version) == "" {
		return BinaryPaths{}, fmt.Errorf("finding the binaries of Kubernetes %s: the testbed builds only %s and %s",
			version, KubernetesVersion, OldestKubernetesVersion)
	}
	paths, err := locateBinaries(version)
	if err != nil {
		return BinaryPaths{}, err
	}
	return paths, paths.check(false)
}

func locateBinaries(kubernetesVersion string) (BinaryPaths, error) {
	root, err := CacheRoot()
	if err != nil {
		return BinaryPaths{}, err
	}
	kubeDir := kubeBinDir(root, kubernetesVersion)
	return BinaryPaths{
		Etcd:                  locateEtcd(kubeDir),
		KubeAPIServer:         filepath.Join(kubeDir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(kubeDir, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(kubeDir, "kube-scheduler"),
		Kwok:                  filepath.Join(kwokBinDir(root), "kwok"),
		Terraform:             filepath.Join(terraformBinDir(root), "terraform"),
		Tofu:                  filepath.Join(tofuBinDir(root), "tofu"),
	}, nil
}

// PackerPath returns the path of the cached Packer CLI, which validates
// examples/packer. Neither a cluster nor the acceptance tests need it, so it
// is not one of the BinaryPaths; the error, a *MissingBinariesError, says how
// to build it.
func PackerPath() (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(packerBinDir(root), "packer")
	if !isExecutable(path) {
		return "", &MissingBinariesError{Missing: []string{fmt.Sprintf("packer (%s)", path)}}
	}
	return path, nil
}

// TerraformPath returns the path of the cached Terraform CLI, requiring
// neither OpenTofu nor the control plane: what `make demo` needs, which does
// not build OpenTofu. The error, a *MissingBinariesError, says how to build it.
func TerraformPath() (string, error) {
	paths, err := locateBinaries(KubernetesVersion)
	if err != nil {
		return "", err
	}
	if !isExecutable(paths.Terraform) {
		return "", &MissingBinariesError{Missing: []string{fmt.Sprintf("terraform (%s)", paths.Terraform)}}
	}
	return paths.Terraform, nil
}

// locateEtcd is $GPU_TESTBED_ETCD when set, else the etcd built beside
// the Kubernetes control plane in kubeDir (the version that Kubernetes
// release pins).
func locateEtcd(kubeDir string) string {
	if path := os.Getenv("GPU_TESTBED_ETCD"); path != "" {
		return path
	}
	return filepath.Join(kubeDir, "etcd")
}

// check returns a *MissingBinariesError naming every required binary that
// is not an executable file.
func (p BinaryPaths) check(withTerraform bool) error {
	required := []struct{ name, path string }{
		{"etcd", p.Etcd},
		{"kube-apiserver", p.KubeAPIServer},
		{"kube-controller-manager", p.KubeControllerManager},
		{"kube-scheduler", p.KubeScheduler},
		{"kwok", p.Kwok},
	}
	if withTerraform {
		required = append(required, struct{ name, path string }{"terraform", p.Terraform}, struct{ name, path string }{"tofu", p.Tofu})
	}
	var missing []string
	for _, bin := range required {
		if !isExecutable(bin.path) {
			missing = append(missing, fmt.Sprintf("%s (%s)", bin.name, bin.path))
		}
	}
	if len(missing) > 0 {
		return &MissingBinariesError{Missing: missing}
	}
	return nil
}

func isExecutable(path string) bool {
	if path == "" {
		return false
	}
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// IsMissingBinaries reports whether err says testbed binaries are missing.
func IsMissingBinaries(err error) bool {
	var missing *MissingBinariesError
	return errors.As(err, &missing)
}

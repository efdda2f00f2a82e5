package testbed

import (
	"fmt"
	"os"
	"path/filepath"
)

// cacheDirName is the directory under the user's cache directory.
const cacheDirName = "terraform-provider-gpu"

// CacheRoot returns where built binaries and the default `gpu-testbed up`
// directory live: $GPU_TESTBED_CACHE if set, else
// $XDG_CACHE_HOME/terraform-provider-gpu, else ~/.cache/terraform-provider-gpu.
func CacheRoot() (string, error) {
	if dir := os.Getenv("GPU_TESTBED_CACHE"); dir != "" {
		return filepath.Abs(dir)
	}
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, cacheDirName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", cacheDirName), nil
}

// binDirs are the version-keyed directories under <root>/bin. kubeBinDir
// holds one Kubernetes release's control plane and etcd (the testbed builds
// two: KubernetesVersion and OldestKubernetesVersion).
func kubeBinDir(root, version string) string { return filepath.Join(root, "bin", "kube-"+version) }
func kwokBinDir(root string) string          { return filepath.Join(root, "bin", "kwok-"+KwokVersion) }
func terraformBinDir(root string) string {
	return filepath.Join(root, "bin", "terraform-"+TerraformVersion)
}

func tofuBinDir(root string) string { return filepath.Join(root, "bin", "tofu-"+TofuVersion) }

func packerBinDir(root string) string { return filepath.Join(root, "bin", "packer-"+PackerVersion) }

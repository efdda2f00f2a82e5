package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCacheRoot(t *testing.T) {
	tests := []struct {
		description string
		env         map[string]string
		want        string
	}{
		{
			description: "GPU_TESTBED_CACHE wins over everything",
			env:         map[string]string{"GPU_TESTBED_CACHE": "/srv/cache", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"},
			want:        "/srv/cache",
		},
		{
			description: "XDG_CACHE_HOME comes next",
			env:         map[string]string{"GPU_TESTBED_CACHE": "", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"},
			want:        "/xdg/terraform-provider-gpu",
		},
		{
			description: "otherwise ~/.cache",
			env:         map[string]string{"GPU_TESTBED_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/home/u"},
			want:        "/home/u/.cache/terraform-provider-gpu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			for key, value := range tt.env {
				t.Setenv(key, value)
			}
			got, err := CacheRoot()
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBinariesAreKeyedByVersionUnderTheCache(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	t.Setenv("GPU_TESTBED_ETCD", "")

	t.Setenv(KubernetesChoiceEnv, "")

	_, err := Binaries()
	var missing *MissingBinariesError
	require.ErrorAs(t, err, &missing)
	require.Len(t, missing.Missing, 7, "every binary is named")
	require.Contains(t, err.Error(), "make testbed")

	paths := map[string]string{
		"etcd":                    filepath.Join(root, "bin", "kube-"+KubernetesVersion, "etcd"),
		"kube-apiserver":          filepath.Join(root, "bin", "kube-"+KubernetesVersion, "kube-apiserver"),
		"kube-controller-manager": filepath.Join(root, "bin", "kube-"+KubernetesVersion, "kube-controller-manager"),
		"kube-scheduler":          filepath.Join(root, "bin", "kube-"+KubernetesVersion, "kube-scheduler"),
		"kwok":                    filepath.Join(root, "bin", "kwok-"+KwokVersion, "kwok"),
		"terraform":               filepath.Join(root, "bin", "terraform-"+TerraformVersion, "terraform"),
		"tofu":                    filepath.Join(root, "bin", "tofu-"+TofuVersion, "tofu"),
	}
	for _, path := range paths {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755))
	}
	got, err := Binaries()
	require.NoError(t, err)
	require.Equal(t, BinaryPaths{
		Etcd:                  paths["etcd"],
		KubeAPIServer:         paths["kube-apiserver"],
		KubeControllerManager: paths["kube-controller-manager"],
		KubeScheduler:         paths["kube-scheduler"],
		Kwok:                  paths["kwok"],
		Terraform:             paths["terraform"],
		Tofu:                  paths["tofu"],
	}, got)

	require.NoError(t, os.Chmod(paths["kwok"], 0o644))
	_, err = Binaries()
	require.ErrorContains(t, err, "kwok", "a file that is not executable counts as missing")
}

func TestGPUTestbedEtcdPointsAtAnotherEtcd(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	other := filepath.Join(t.TempDir(), "etcd")
	t.Setenv("GPU_TESTBED_ETCD", other)
	_, err := KubernetesBinaries(KubernetesVersion)
	require.ErrorContains(t, err, "etcd ("+other+")", "the etcd named is the one looked for")

	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	got, err := locateBinaries(OldestKubernetesVersion)
	require.NoError(t, err)
	require.Equal(t, other, got.Etcd)
}

func TestTheClusterDoesNotNeedTerraform(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	t.Setenv("GPU_TESTBED_ETCD", "/nonexistent/etcd")
	_, err := KubernetesBinaries(KubernetesVersion)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "terraform")
}

// make demo builds no OpenTofu: the Terraform CLI's path must not need it.
func TestTerraformPathDoesNotNeedTofu(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	_, err := TerraformPath()
	require.ErrorContains(t, err, "terraform")
	dir := filepath.Join(root, "bin", "terraform-"+TerraformVersion)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "terraform"), []byte("#!/bin/sh\n"), 0o755))
	got, err := TerraformPath()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "terraform"), got)
}

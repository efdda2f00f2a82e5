package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGPUTestbedKubernetesChoosesTheRelease(t *testing.T) {
	tests := []struct{ value, want string }{
		{"", KubernetesVersion},
		{"newest", KubernetesVersion},
		{"oldest", OldestKubernetesVersion},
		{" oldest ", OldestKubernetesVersion},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Setenv(KubernetesChoiceEnv, tt.value)
			got, err := ChosenKubernetesVersion()
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, map[string]string{KubernetesVersion: "newest", OldestKubernetesVersion: "oldest"}[got], KubernetesChoice(got))
		})
	}
}

func TestGPUTestbedKubernetesRejectsAnythingElseNamingTheValidValues(t *testing.T) {
	t.Setenv(KubernetesChoiceEnv, "v1.34.4")
	_, err := ChosenKubernetesVersion()
	require.EqualError(t, err, `reading GPU_TESTBED_KUBERNETES="v1.34.4": valid values are "newest" (Kubernetes `+
		KubernetesVersion+`, the default) and "oldest" (Kubernetes `+OldestKubernetesVersion+`)`)
	_, err = Binaries()
	require.ErrorContains(t, err, "GPU_TESTBED_KUBERNETES", "Binaries does not fall back to a release nobody chose")
	require.False(t, IsMissingBinaries(err), "a bad choice is not missing binaries: tests must not skip over it")
}

// The oldest release's control plane and etcd come from their own cache
// directory; kwok and the CLIs are the same in both runs.
func TestOldestKubernetesBinariesComeFromTheirOwnCacheDirectory(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	t.Setenv("GPU_TESTBED_ETCD", "")
	t.Setenv(KubernetesChoiceEnv, "oldest")

	newest, err := locateBinaries(KubernetesVersion)
	require.NoError(t, err)
	for _, path := range []string{newest.Etcd, newest.KubeAPIServer, newest.KubeControllerManager, newest.KubeScheduler, newest.Kwok, newest.Terraform, newest.Tofu} {
		writeExecutable(t, filepath.Dir(path), filepath.Base(path))
	}
	_, err = Binaries()
	require.ErrorContains(t, err, filepath.Join(root, "bin", "kube-"+OldestKubernetesVersion, "kube-apiserver"),
		"with only the newest built, the oldest run names what it misses")
	require.True(t, IsMissingBinaries(err))

	oldestDir := filepath.Join(root, "bin", "kube-"+OldestKubernetesVersion)
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		writeExecutable(t, oldestDir, bin)
	}
	got, err := Binaries()
	require.NoError(t, err)
	require.Equal(t, BinaryPaths{
		Etcd:                  filepath.Join(oldestDir, "etcd"),
		KubeAPIServer:         filepath.Join(oldestDir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(oldestDir, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(oldestDir, "kube-scheduler"),
		Kwok:                  newest.Kwok,
		Terraform:             newest.Terraform,
		Tofu:                  newest.Tofu,
	}, got)

	_, err = KubernetesBinaries("v1.33.0")
	require.ErrorContains(t, err, "the testbed builds only "+KubernetesVersion+" and "+OldestKubernetesVersion)
	require.NoError(t, os.Remove(filepath.Join(oldestDir, "etcd")))
	_, err = KubernetesBinaries(OldestKubernetesVersion)
	require.ErrorContains(t, err, filepath.Join(oldestDir, "etcd"))
}

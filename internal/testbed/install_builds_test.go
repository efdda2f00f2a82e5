package testbed

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSelectSteps(t *testing.T) {
	tests := []struct {
		description string
		only        []string
		want        []string
	}{
		{
			description: "the demo set builds what make demo runs: no OpenTofu, no Packer",
			only:        []string{"demo"},
			want:        []string{"kube", "terraform", "kwok"},
		},
		{
			description: "the test set builds everything, the oldest supported Kubernetes too",
			only:        []string{"test"},
			want:        []string{"kube", "kube-oldest", "terraform", "kwok", "tofu", "packer"},
		},
		{
			description: "no selection is the test set, which make testbed (and so make test and CI) relies on",
			want:        []string{"kube", "kube-oldest", "terraform", "kwok", "tofu", "packer"},
		},
		{
			description: "the oldest Kubernetes alone, by name",
			only:        []string{"kube-oldest"},
			want:        []string{"kube-oldest"},
		},
		{
			description: "builds by name, in the table's order whatever the order asked",
			only:        []string{"packer", "kwok"},
			want:        []string{"kwok", "packer"},
		},
		{
			description: "a set and a name together, each build once",
			only:        []string{"demo", " tofu", "kube"},
			want:        []string{"kube", "terraform", "kwok", "tofu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, err := selectSteps(buildSteps("/cache", "/tools"), tt.only)
			require.NoError(t, err)
			require.Equal(t, tt.want, stepNames(got))
		})
	}
}

func TestSelectStepsRejectsAnUnknownName(t *testing.T) {
	_, err := selectSteps(buildSteps("/cache", "/tools"), []string{"demo", "opentofu"})
	require.ErrorContains(t, err, `--only: unknown build "opentofu"`)
	require.ErrorContains(t, err, "kube, kube-oldest, terraform, kwok, tofu, packer", "the error lists what is valid")
}

// The demo set holds the binaries the demo's testbed and Terraform CLI
// need, and nothing else: what Binaries resolves, etcd included, minus
// tofu (the acceptance tests').
func TestDemoSetBuildsWhatTheDemoRuns(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	t.Setenv("GPU_TESTBED_ETCD", "")
	demo, err := selectSteps(buildSteps(root, "/tools"), []string{"demo"})
	require.NoError(t, err)
	var built []string
	for _, step := range demo {
		for _, bin := range step.binaries {
			built = append(built, step.dir+"/"+bin)
		}
	}
	paths, err := locateBinaries(KubernetesVersion)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		paths.Etcd, paths.KubeAPIServer, paths.KubeControllerManager, paths.KubeScheduler, paths.Kwok, paths.Terraform,
	}, built)
}

func TestFirstRunEstimate(t *testing.T) {
	root := t.TempDir()
	demo, err := selectSteps(buildSteps(root, "/tools"), []string{"demo"})
	require.NoError(t, err)
	require.Contains(t, firstRunEstimate(demo),
		"first run builds 6 binaries (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, terraform, kwok): about ")
	require.Contains(t, firstRunEstimate(demo), "later runs start in seconds")

	for _, step := range demo[:2] { // kube and terraform present
		for _, bin := range step.binaries {
			writeExecutable(t, step.dir, bin)
		}
	}
	require.Contains(t, firstRunEstimate(demo), "this run builds 1 binaries (kwok)")
	writeExecutable(t, demo[2].dir, "kwok")
	require.Empty(t, firstRunEstimate(demo), "nothing to build, nothing to announce")
}

// Each Kubernetes step builds its release from its own tools module, etcd
// included, stamps that release's version into the binaries and lands in a
// cache directory keyed by it; the oldest is built by make test only.
func TestEachKubernetesReleaseIsBuiltFromItsOwnModule(t *testing.T) {
	steps := buildSteps("/cache", "/tools")
	byName := map[string]buildStep{}
	for _, step := range steps {
		byName[step.name] = step
	}
	for _, tt := range []struct {
		name, version, module string
		sets                  []Set
	}{
		{"kube", KubernetesVersion, "/tools/kube", []Set{SetDemo, SetTest}},
		{"kube-oldest", OldestKubernetesVersion, "/tools/kube-oldest", []Set{SetTest}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			step, ok := byName[tt.name]
			require.True(t, ok)
			require.Equal(t, "/cache/bin/kube-"+tt.version, step.dir)
			require.Equal(t, tt.sets, step.sets)
			require.Equal(t, []string{"-C", tt.module, "install"}, step.goArgs[:3])
			require.Contains(t, step.goArgs, "github.com/gpuinfra/terraform-provider-gpu/tools/"+tt.name+"/etcd")
			require.Contains(t, step.goArgs[4], "-X k8s.io/component-base/version.gitVersion="+tt.version+" ")
			require.Contains(t, step.title, tt.version)
		})
	}
}

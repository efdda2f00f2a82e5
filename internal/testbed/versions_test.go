package testbed

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The kube tools modules build the two control planes: each one's
// k8s.io/kubernetes requirement must be the version the testbed claims to
// run, and every staging module it replaces must be that release's v0 twin.
func TestToolsModulesPinKubernetesVersions(t *testing.T) {
	for module, version := range map[string]string{"kube": KubernetesVersion, "kube-oldest": OldestKubernetesVersion} {
		t.Run(module, func(t *testing.T) {
			data, err := os.ReadFile("../../tools/" + module + "/go.mod")
			require.NoError(t, err)
			goMod := string(data)

			pinned := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)`).FindStringSubmatch(goMod)
			require.NotNil(t, pinned, "tools/%s/go.mod does not require k8s.io/kubernetes", module)
			require.Equal(t, version, pinned[1], "tools/%s/go.mod's k8s.io/kubernetes", module)

			stagingVersion := "v0." + strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[1]
			replaces := regexp.MustCompile(`(?m)^\s*(?:replace\s+)?(k8s\.io/\S+)\s+=>\s+\S+\s+(v\S+)`).FindAllStringSubmatch(goMod, -1)
			require.NotEmpty(t, replaces, "tools/%s/go.mod replaces no staging module", module)
			for _, replace := range replaces {
				if replace[2] != stagingVersion {
					t.Errorf("tools/%s/go.mod replaces %s with %s, want %s", module, replace[1], replace[2], stagingVersion)
				}
			}
		})
	}
}

// The tofu tools module builds the OpenTofu CLI: its requirement must be
// the version the acceptance tests claim to run under.
func TestToolsModulePinsTofuVersion(t *testing.T) {
	data, err := os.ReadFile("../../tools/tofu/go.mod")
	require.NoError(t, err)
	pinned := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/opentofu/opentofu\s+(v\S+)`).FindStringSubmatch(string(data))
	require.NotNil(t, pinned, "tools/tofu/go.mod does not require github.com/opentofu/opentofu")
	require.Equal(t, TofuVersion, pinned[1])
}

// The packer tools module builds the Packer CLI that validates
// examples/packer: its requirement must be the version the testbed caches.
func TestToolsModulePinsPackerVersion(t *testing.T) {
	data, err := os.ReadFile("../../tools/packer/go.mod")
	require.NoError(t, err)
	pinned := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/hashicorp/packer\s+(v\S+)`).FindStringSubmatch(string(data))
	require.NotNil(t, pinned, "tools/packer/go.mod does not require github.com/hashicorp/packer")
	require.Equal(t, PackerVersion, pinned[1])
}

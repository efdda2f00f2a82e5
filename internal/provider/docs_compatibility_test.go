package provider

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The Compatibility table of docs/index.md names the versions the tests
// run and the provider models; the constants are their one home.
func TestCompatibilityNamesTheVersionsTestedAndModelled(t *testing.T) {
	page, err := os.ReadFile("../../docs/index.md")
	require.NoError(t, err)
	section := string(page)
	start := strings.Index(section, "## Compatibility")
	require.GreaterOrEqual(t, start, 0, "docs/index.md has a Compatibility section")
	section = section[start:]
	tag := func(image string) string { return image[strings.LastIndex(image, ":")+1:] }
	for row, version := range map[string]string{
		"Terraform":              testbed.TerraformVersion,
		"OpenTofu":               testbed.TofuVersion,
		"Kubernetes":             testbed.OldestKubernetesVersion + " (oldest) to " + testbed.KubernetesVersion + " (newest)",
		"NVIDIA device plugin":   tag(kube.DefaultDevicePluginImage),
		"Node Feature Discovery": tag(kube.DefaultNFDImage),
		"NVIDIA DRA driver":      nvdra.DriverVersion,
		"DCGM exporter":          tag(kube.DefaultDCGMExporterImage),
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)^\| `+regexp.QuoteMeta(row)+` \| `+regexp.QuoteMeta(version)+` \|`), section, row)
	}
}

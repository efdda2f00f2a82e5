package eks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAMITypesRunOnTheirArchitectureAndDefaultToAmazonLinux2023(t *testing.T) {
	for _, ami := range NVIDIAAMITypes[:len(NVIDIAAMITypes)-1] {
		arch, ok := AMIArchitecture(ami)
		require.True(t, ok, ami)
		matching, _ := AMIArchitecture(MatchingAMIType(ami, arch))
		require.Equal(t, arch, matching, "the type matching %s on %s runs on %s", ami, arch, arch)
	}
	_, ok := AMIArchitecture(AMITypeCustom)
	require.False(t, ok, "CUSTOM runs on any architecture")
	require.Equal(t, AMITypeAL2023x86NVIDIA, DefaultAMIType("x86_64"))
	require.Equal(t, AMITypeAL2023ARMNVIDIA, DefaultAMIType("arm64"))
	require.Equal(t, AMITypeBottlerocketARMNVIDIA, MatchingAMIType(AMITypeBottlerocketx86NVIDIA, "arm64"))
	require.Equal(t, AMITypeAL2023ARMNVIDIA, MatchingAMIType(AMITypeAL2x86GPU, "arm64"))
}

func TestAMITypeUnavailableAfterAL2sLastVersion(t *testing.T) {
	for _, tt := range []struct{ amiType, version, want string }{
		{AMITypeAL2x86GPU, "1.32", ""},
		{AMITypeAL2x86GPU, "1.31.4", ""},
		{AMITypeAL2x86GPU, "1.33", "EKS publishes no AL2_x86_64_GPU AMI for Kubernetes 1.33: AL2 AMIs ended with 1.32 (EKS stopped releasing them on November 26, 2025)"},
		{AMITypeAL2x86GPU, "1.37.2", "EKS publishes no AL2_x86_64_GPU AMI for Kubernetes 1.37.2: AL2 AMIs ended with 1.32 (EKS stopped releasing them on November 26, 2025)"},
		{AMITypeAL2023x86NVIDIA, "1.37", ""},
		{AMITypeBottlerocketx86NVIDIA, "1.37", ""},
		{AMITypeAL2x86GPU, "", ""},
		{AMITypeAL2x86GPU, "latest", ""},
	} {
		if got := AMITypeUnavailable(tt.amiType, tt.version); got != tt.want {
			t.Errorf("AMITypeUnavailable(%q, %q) = %q, want %q", tt.amiType, tt.version, got, tt.want)
		}
	}
}

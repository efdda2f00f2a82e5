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

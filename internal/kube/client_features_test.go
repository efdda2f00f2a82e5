package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientfeatures "k8s.io/client-go/features"
)

// The provider's collections are read with LISTs, not client-go v0.35's
// streaming lists, even where the environment turns them on.
func TestWatchListClientIsOff(t *testing.T) {
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	require.False(t, clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient))
	require.True(t, clientfeatures.FeatureGates().Enabled(clientfeatures.InformerResourceVersion), "the other gates keep client-go's defaults")
}

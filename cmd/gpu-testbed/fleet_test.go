package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultFleetIsNamedAfterInstanceFamilies(t *testing.T) {
	specs, err := fleetNodes()
	require.NoError(t, err)
	var names []string
	for _, spec := range specs {
		names = append(names, spec.Name)
	}
	require.Equal(t, []string{
		"gpu-p5-0", "gpu-p5-1", "gpu-p4d-0", "gpu-p4d-1", "gpu-g5-0", "gpu-g5-1", "gpu-g5-2",
		"gpu-g4dn-0", "gpu-g4dn-1", "cpu-m5-0",
	}, names)
}

func TestShellQuote(t *testing.T) {
	require.Equal(t, `'/tmp/a b/kubeconfig'`, shellQuote("/tmp/a b/kubeconfig"))
	require.Equal(t, `'it'\''s'`, shellQuote("it's"))
}

func TestDefaultFleetWaitsForTheDevicePlugin(t *testing.T) {
	specs, err := fleetNodes()
	require.NoError(t, err)
	for _, spec := range specs {
		require.Equal(t, spec.InstanceType.HasGPU(), spec.WithoutGPUCapacity,
			"%s: GPU nodes start without nvidia.com/gpu, as before a device plugin runs", spec.Name)
	}
}

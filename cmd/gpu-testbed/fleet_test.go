package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
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
		"gpu-g4dn-0", "gpu-g4dn-1", "cpu-m5-0", "dra-p5-0", "dra-p4d-0", "dra-mig-p4d-0",
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
		require.Equal(t, spec.InstanceType.HasGPU() && !spec.DRA, spec.WithoutGPUCapacity,
			"%s: device-plugin GPU nodes start without nvidia.com/gpu, as before a device plugin runs", spec.Name)
	}
}

func TestDefaultFleetHasDRANodesBesideDevicePluginNodes(t *testing.T) {
	specs, err := fleetNodes()
	require.NoError(t, err)
	byName := map[string]k8s.NodeSpec{}
	for _, spec := range specs {
		byName[spec.Name] = spec
	}
	require.True(t, byName["dra-p5-0"].DRA)
	require.Empty(t, byName["dra-p5-0"].MIGDevices)
	require.True(t, byName["dra-mig-p4d-0"].DRA)
	require.Len(t, byName["dra-mig-p4d-0"].MIGDevices, 7)
	require.False(t, byName["gpu-p5-0"].DRA)
	// The MIG layout fits the GPU.
	gpu, err := nvdra.GPUOf(byName["dra-mig-p4d-0"].InstanceType)
	require.NoError(t, err)
	_, err = nvdra.PlaceMIGDevices(gpu.ProductName, byName["dra-mig-p4d-0"].MIGDevices)
	require.NoError(t, err)
}

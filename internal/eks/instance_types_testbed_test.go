package eks

// Instance-type facts, subnet and offering zones and the GPU catalog from
// the emulator's EC2, through the SDK's real client.

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInstanceTypesAreAskedOnceAndCached(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	emu.ResetCallCounts()
	types, err := c.InstanceTypes(ctx, []string{"p5.48xlarge", "g5.xlarge", "m5.large"})
	require.NoError(t, err)
	require.Equal(t, 1, emu.CallCounts()["ec2:DescribeInstanceTypes"], "one call for many names")

	p5 := types["p5.48xlarge"]
	require.Equal(t, []string{"x86_64"}, p5.Architectures)
	require.Equal(t, 192, p5.VCPUs)
	gpu, ok := p5.NVIDIAGPUs()
	require.True(t, ok)
	require.Equal(t, "H100", gpu.Name)
	require.Equal(t, 8, gpu.Count)
	require.Equal(t, int64(81920), gpu.MemoryMiB)
	_, ok = types["m5.large"].NVIDIAGPUs()
	require.False(t, ok, "a CPU type has no NVIDIA GPU")

	_, err = c.InstanceTypes(ctx, []string{"g5.xlarge", "p5.48xlarge"})
	require.NoError(t, err)
	require.Equal(t, 1, emu.CallCounts()["ec2:DescribeInstanceTypes"], "known types come from the cache")
}

func TestInstanceTypesNameTheUnknownOnes(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	_, err := c.InstanceTypes(ctx, []string{"g5.xlarge", "p5.48xlarg", "g9.huge"})
	var unknown *UnknownInstanceTypesError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, []string{"p5.48xlarg", "g9.huge"}, unknown.Names)

	emu.ResetCallCounts()
	_, err = c.InstanceTypes(ctx, []string{"g5.xlarge"})
	require.NoError(t, err)
	require.Zero(t, emu.CallCounts()["ec2:DescribeInstanceTypes"], "the known type of a failed request was learnt")
}

func TestSubnetZones(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	zones, err := c.SubnetZones(ctx, []string{"subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60004"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"subnet-0a1b2c3d4e5f60001": "us-west-2a", "subnet-0a1b2c3d4e5f60004": "us-west-2d"}, zones)

	_, err = c.SubnetZones(ctx, []string{"subnet-0a1b2c3d4e5f60001", "subnet-0000000000000dead"})
	var unknown *UnknownSubnetsError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, []string{"subnet-0000000000000dead"}, unknown.IDs)
}

func TestOfferedZones(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	zones, err := c.OfferedZones(ctx, []string{"p5.48xlarge", "g5.xlarge"})
	require.NoError(t, err)
	require.NotEmpty(t, zones["p5.48xlarge"])
	require.NotContains(t, zones["p5.48xlarge"], "us-west-2d", "p5.48xlarge is not offered in us-west-2d")
	require.True(t, slices.IsSorted(zones["g5.xlarge"]))
	require.Contains(t, zones["g5.xlarge"], "us-west-2a")
}

func TestGPUCatalogFilters(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	all, err := c.GPUCatalog(ctx, CatalogFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, all)
	require.True(t, slices.IsSortedFunc(all, func(a, b CatalogEntry) int { return strings.Compare(a.Name, b.Name) }))
	for _, e := range all {
		require.Equal(t, "NVIDIA", e.GPU.Manufacturer, "%s: NVIDIA GPU types only", e.Name)
		require.NotEmpty(t, e.Zones, e.Name)
		require.Nil(t, e.SpotPrices, "no prices unless asked")
	}

	big, err := c.GPUCatalog(ctx, CatalogFilter{GPUProducts: []string{"h100"}, MinGPUs: 8, MinGPUMemoryGiB: 80, AvailabilityZones: []string{"us-west-2d", "us-west-2a"}, SpotPrices: true})
	require.NoError(t, err)
	require.NotEmpty(t, big)
	for _, e := range big {
		require.Equal(t, "H100", e.GPU.Name)
		require.GreaterOrEqual(t, e.GPU.Count, 8)
		require.NotContains(t, e.Zones, "us-west-2d", "%s is not offered there", e.Name)
		require.Subset(t, []string{"us-west-2a", "us-west-2d"}, e.Zones, "zones are cut to the filter's")
		for zone, price := range e.SpotPrices {
			require.Contains(t, e.Zones, zone)
			require.Positive(t, price)
		}
		require.NotEmpty(t, e.SpotPrices, "%s has a spot price in its zones", e.Name)
	}

	none, err := c.GPUCatalog(ctx, CatalogFilter{Architectures: []string{"arm64"}, MinGPUs: 64})
	require.NoError(t, err)
	require.Empty(t, none)
}

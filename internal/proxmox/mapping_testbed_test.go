package proxmox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// TestTestbed_mappingsPassPVEsOwnCheck reads the testbed's mappings one by
// one and checks each entry against its node's hardware as qemu-server
// does before a start: the mappings VMs start with pass it.
func TestTestbed_mappingsPassPVEsOwnCheck(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	for _, id := range []string{pveemu.MappingA6000First, pveemu.MappingA6000Second, pveemu.MappingL40SVGPU} {
		m, found, err := c.ReadPCIMapping(ctx, id)
		require.NoError(t, err)
		require.True(t, found, id)
		require.Equal(t, id, m.ID)
		require.NotEmpty(t, m.Digest, "the digest an update is given")
		require.NotEmpty(t, m.Entries)
		for _, e := range m.Entries {
			fns, err := c.PCIFunctions(ctx, e.Node)
			require.NoError(t, err)
			require.Empty(t, m.Check(e, fns), "%s on %s", id, e.Node)
			device := fns[0:0]
			for _, fn := range fns {
				if PCIListCovers(e.Path, fn.Address) {
					device = append(device, fn)
				}
			}
			want := EntryForDevice(e.Node, device, !PCIHasFunction(e.Path))
			want.Description = e.Description
			require.Equal(t, want, e, "EntryForDevice writes what the mapping holds")
		}
	}
	_, found, err := c.ReadPCIMapping(ctx, "no-such-mapping")
	require.NoError(t, err)
	require.False(t, found)
}

package proxmox

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// checkNodeMessages are the errors GET /cluster/mapping/pci?check-node=
// gives mapping id on node: PVE's assert_valid, run by the emulator.
func checkNodeMessages(t *testing.T, c *Client, id, node string) []string {
	t.Helper()
	var rows []struct {
		ID     string `json:"id"`
		Checks []struct {
			Severity string `json:"severity"`
			Message  string `json:"message"`
		} `json:"checks"`
	}
	require.NoError(t, c.get(testCtx(t), "/cluster/mapping/pci?check-node="+node, &rows))
	var out []string
	for _, r := range rows {
		if r.ID != id {
			continue
		}
		for _, ch := range r.Checks {
			out = append(out, ch.Severity+": "+ch.Message)
		}
	}
	return out
}

// TestTestbed_movedCardFailsTheCheckAsPVESays moves a mapped L40S to
// another slot and back (a new IOMMU group each time) and holds
// PCIMapping.Check to what PVE's own check (check-node) says, and the
// preflight to it.
func TestTestbed_movedCardFailsTheCheckAsPVESays(t *testing.T) {
	c, ctx := mappingClient(t), testCtx(t)
	node := pveemu.NodeL40SB
	entries, _ := l40sPoolEntries(t, c)
	m := PCIMapping{ID: "backend-drift", Mdev: true, Entries: entries}
	createdMapping(t, c, m)
	require.Empty(t, checkNodeMessages(t, c, m.ID, node))

	move := func(from, to string) {
		t.Helper()
		require.NoError(t, emu.MovePCIDevice(node, from, to))
	}
	move("0000:61:00", "0000:81:00")
	t.Cleanup(func() { _ = emu.MovePCIDevice(node, "0000:81:00", "0000:61:00") })

	fns, err := c.PCIFunctions(ctx, node)
	require.NoError(t, err)
	require.Empty(t, m.Check(entries[0], fns), "the card left in place still passes")
	problem := m.Check(entries[1], fns)
	require.Equal(t, "pci device '0000:61:00.0' not found", problem)
	require.Equal(t, []string{"error: Invalid configuration: " + problem + "\n"}, checkNodeMessages(t, c, m.ID, node))
	moved, ok := functionAt(fns, "0000:81:00.0")
	require.True(t, ok)
	require.Empty(t, m.Check(EntryForDevice(node, []PCIFunction{moved}, false), fns), "the card at its new address")

	gpus := []GPU{{Mapping: m.ID, PCIE: true, ROMBar: true}}
	facts, err := c.ReadNodeFacts(ctx, node, gpus)
	require.NoError(t, err)
	findings := Preflight(PreflightVM{Node: node}, gpus, facts)
	require.Len(t, findings, 1)
	require.Equal(t, FindingMappingNoDevice, findings[0].Kind)
	require.Equal(t, "0000:61:00.0", findings[0].Path)

	// Back in its slot, in yet another IOMMU group.
	move("0000:81:00", "0000:61:00")
	fns, err = c.PCIFunctions(ctx, node)
	require.NoError(t, err)
	back, ok := functionAt(fns, "0000:61:00.0")
	require.True(t, ok)
	problem = m.Check(entries[1], fns)
	require.Equal(t, fmt.Sprintf("'iommugroup' does not match for 'backend-drift' (%d != %d)", back.IOMMUGroup, entries[1].IOMMUGroup), problem)
	require.Equal(t, []string{"error: Invalid configuration: " + problem + "\n"}, checkNodeMessages(t, c, m.ID, node))
	facts, err = c.ReadNodeFacts(ctx, node, gpus)
	require.NoError(t, err)
	findings = Preflight(PreflightVM{Node: node}, gpus, facts)
	require.Len(t, findings, 1)
	require.Equal(t, FindingMappingInvalid, findings[0].Kind)
	require.Equal(t, problem, findings[0].Problem)

	// PVE agrees: a VM with the mapping does not start.
	spec := poolVM("drift", m.ID)
	vm, err := c.CreateVM(ctx, spec)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	var te *TaskError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "PCI device mapping invalid (hardware probably changed): "+problem, te.ExitStatus)
}

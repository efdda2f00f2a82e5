package proxmox

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Resources without a vmid are created in parallel by one apply: each must
// get its own ID, not collide on the one /cluster/nextid suggests to all.
func TestTestbed_parallelCreatesWithoutVMIDGetDistinctIDs(t *testing.T) {
	c := tokenClient(t)
	ctx := testCtx(t)
	const n = 4
	vms := make([]VM, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := gpuVM(fmt.Sprintf("parallel-%d", i)) // no GPU: only the IDs are under test
			spec.Started = false
			vms[i], errs[i] = c.CreateVM(ctx, spec)
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		require.NoError(t, errs[i], "create %d", i)
		deleteAtEnd(t, c, vms[i].Node, vms[i].VMID)
		require.NotZero(t, vms[i].VMID)
		require.False(t, seen[vms[i].VMID], "VM ID %d given twice", vms[i].VMID)
		seen[vms[i].VMID] = true
	}
}

func TestVMIDTakenRecognisesPVEsRefusals(t *testing.T) {
	for _, tc := range []struct {
		err   error
		taken bool
	}{
		{&APIError{Status: "500", Message: "unable to create VM 100: config file already exists"}, true},
		{&APIError{Status: "500", Message: "VM 100 already exists on node 'pve1'"}, true},
		{&APIError{Status: "400", Message: "Parameter verification failed.", Errors: map[string]any{"vmid": "VM 100 already exists"}}, true},
		{fmt.Errorf("cloning: %w", &APIError{Status: "500", Message: "unable to create VM 101: config file already exists"}), true},
		{&APIError{Status: "500", Message: "only root can set 'hostpci0' config for non-mapped devices"}, false},
		{errors.New("VM 100 already exists"), false}, // not an answer of PVE's
	} {
		require.Equal(t, tc.taken, vmidTaken(tc.err), "%v", tc.err)
	}
}

package proxmox

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// A create whose wait is cut short, or whose answer is lost, returns the
// VM it left (non-zero) with its error; one PVE refused returns none.

// awaitHeld waits until the emulator holds a task, and returns it.
func awaitHeld(t *testing.T) string {
	t.Helper()
	var held []string
	require.NoError(t, poll.Until(testCtx(t), poll.Log{}, "a held task", poll.Schedule{Initial: 20 * time.Millisecond, Factor: 1.5, Max: 500 * time.Millisecond},
		func(context.Context) (bool, error) {
			held = emu.HeldTasks()
			return len(held) > 0, nil
		}))
	return held[0]
}

func TestTestbed_cloneCutShortReturnsTheVM(t *testing.T) {
	for _, cut := range []struct {
		description string
		cause       error
	}{
		{"Ctrl-C cancels the create while its clone runs", context.Canceled},
		{"the create's timeout expires while its clone runs", context.DeadlineExceeded},
	} {
		t.Run(cut.description, func(t *testing.T) {
			c := tokenClient(t)
			emu.HoldNextTask("qmclone")
			t.Cleanup(emu.ReleaseHeldTasks)
			ctx, cancel := context.WithCancelCause(testCtx(t))
			type result struct {
				vm  VM
				err error
			}
			done := make(chan result, 1)
			go func() {
				vm, err := c.CreateVM(ctx, gpuVM("cut-short", GPU{Mapping: "a6000-1", PCIE: true, ROMBar: true, AllFunctions: true}))
				done <- result{vm, err}
			}()
			awaitHeld(t)
			cancel(cut.cause)
			r := <-done
			deleteAtEnd(t, c, r.vm.Node, r.vm.VMID)
			require.ErrorIs(t, r.err, cut.cause)
			require.ErrorContains(t, r.err, "waiting for Proxmox task qmclone")
			require.NotZero(t, r.vm.VMID, "the VM exists: its identity comes back")
			require.Equal(t, "pve-a6000", r.vm.Node)
			require.Equal(t, "cut-short", r.vm.Name)
			conf, found := emu.VMConfig(r.vm.Node, r.vm.VMID)
			require.True(t, found)
			require.Equal(t, "clone", conf["lock"], "its clone still runs")

			// Destroying it waits for the clone to finish (PVE refuses to
			// destroy a locked VM).
			deleted := make(chan error, 1)
			go func() { deleted <- c.DeleteVM(testCtx(t), r.vm.Node, r.vm.VMID) }()
			emu.ReleaseHeldTasks()
			require.NoError(t, <-deleted)
			_, found = emu.VMConfig(r.vm.Node, r.vm.VMID)
			require.False(t, found, "destroyed")
		})
	}
}

// isClone matches a clone request.
func isClone(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/clone")
}

func TestTestbed_cloneWhoseAnswerWasLostReturnsTheVM(t *testing.T) {
	s := testbedSettings(t)
	s.Endpoint, s.CACertificatePEM = emu.AnswerDroppingProxy(t, isClone)
	s.TokenID, s.TokenSecret = pveemu.TokenID, pveemu.TokenSecret
	c, err := s.Connect(testCtx(t))
	require.NoError(t, err)
	vm, err := c.CreateVM(testCtx(t), gpuVM("answer-lost", GPU{Mapping: "a6000-1", PCIE: true, ROMBar: true, AllFunctions: true}))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.ErrorContains(t, err, "cloning ubuntu-2404-cloud")
	require.ErrorIs(t, err, io.EOF)
	require.NotZero(t, vm.VMID, "PVE cloned: the VM comes back")
	_, found := emu.VMConfig(vm.Node, vm.VMID)
	require.True(t, found)
}

func TestTestbed_refusedCloneReturnsNoVM(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	other, err := c.CreateVM(ctx, VMSpec{Node: "pve-a6000", Name: "someone-elses"})
	deleteAtEnd(t, c, other.Node, other.VMID)
	require.NoError(t, err)

	spec := gpuVM("collides")
	spec.VMID = other.VMID
	vm, err := c.CreateVM(ctx, spec)
	var refused *APIError
	require.ErrorAs(t, err, &refused)
	require.ErrorContains(t, err, "already exists")
	require.Zero(t, vm, "PVE refused the clone: nothing to keep, and the VM at that ID is another's")

	spec = gpuVM("no-such-template")
	spec.Clone.Source = "no-such-template"
	vm, err = c.CreateVM(ctx, spec)
	var source *CloneSourceError
	require.ErrorAs(t, err, &source)
	require.Equal(t, "no-such-template", source.Source)
	require.NotContains(t, err.Error(), "clone.source", "a backend error names no Terraform attribute")
	require.Zero(t, vm)
}

func TestTestbed_failedCloneTaskReturnsNoVM(t *testing.T) {
	c := tokenClient(t)
	emu.FailNextTask("qmclone", "clone failed: storage 'local-lvm' is full")
	vm, err := c.CreateVM(testCtx(t), gpuVM("clone-failed"))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	var failed *TaskError
	require.ErrorAs(t, err, &failed)
	require.False(t, errors.Is(err, context.Canceled))
	require.Zero(t, vm, "PVE removed the VM of its failed clone")
}

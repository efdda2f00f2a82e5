package provider

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// Whatever an apply creates in Proxmox is in the state, tainted when the
// apply did not finish: a clone whose wait was cut short by
// timeouts.create or by Ctrl-C, and a clone PVE carried out while its
// answer was lost on the way back.

// pveVMsNamed are the VMIDs of node's VMs named name, or whose clone to
// that name still runs (a running clone's config holds only its lock).
func pveVMsNamed(node, name string) []int {
	var out []int
	for id := 100; id < 1000; id++ {
		if conf, found := pve.VMConfig(node, id); found && (conf["name"] == name || (conf["name"] == "" && conf["lock"] == "clone")) {
			out = append(out, id)
		}
	}
	return out
}

// awaitHeldTask waits until the emulator holds a task (its request was
// answered), bounded.
func awaitHeldTask(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var held []string
	require.NoError(t, poll.Until(ctx, poll.Log{}, "a held Proxmox task", poll.Schedule{Initial: 50 * time.Millisecond, Factor: 1.5, Max: time.Second},
		func(context.Context) (bool, error) {
			held = pve.HeldTasks()
			return len(held) > 0, nil
		}))
	require.Len(t, held, 1)
	return held[0]
}

// taintedThenReplaced is the step after a cut-short create: the one VM
// named name that the apply left (its clone released now) is in the
// state, tainted, so the next apply replaces it (destroying it once its
// clone is done), and the test's destroy removes the new one.
func taintedThenReplaced(t *testing.T, name, config string) resource.TestStep {
	address := "gpu_passthrough_vm." + name
	var left int
	return resource.TestStep{
		PreConfig: func() {
			ids := pveVMsNamed(pveemu.NodeA6000, name)
			require.Len(t, ids, 1, "the cut-short apply left one VM")
			left = ids[0]
			pve.ResetCallCounts()
			pve.ReleaseHeldTasks()
		},
		Config: config,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(address, plancheck.ResourceActionReplace),
		}},
		Check: func(s *terraform.State) error {
			require.Equal(t, 1, pve.CallCounts()["DELETE /nodes/{node}/qemu/{vmid}"], "the tainted VM %d was destroyed", left)
			id := vmidOf(t, s, address)
			require.Equal(t, []int{id}, pveVMsNamed(pveemu.NodeA6000, name), "one VM of that name: the new one (its ID may be the freed one)")
			require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, id))
			return nil
		},
	}
}

// noVMNamed is a CheckDestroy: after the test, no VM of that name is left.
func noVMNamed(name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if ids := pveVMsNamed(pveemu.NodeA6000, name); len(ids) > 0 {
			return fmt.Errorf("VMs %v named %s are left in Proxmox", ids, name)
		}
		return nil
	}
}

// orphanGPU is the body of these tests' VMs.
const orphanGPU = `
  gpu {
    mapping = "a6000-1"
  }
`

func TestAccPassthroughVM_cloneCutShortByTimeoutIsKeptTainted(t *testing.T) {
	testAccPreCheck(t)
	const name = "timed-out"
	config := pveProviders() + pveVM(name, "", pveemu.NodeA6000, orphanGPU+`
  timeouts {
    create = "20s"
  }
`)
	t.Cleanup(pve.ReleaseHeldTasks)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		CheckDestroy:             noVMNamed(name),
		Steps: []resource.TestStep{
			// The clone is answered, then its task outlasts timeouts.create.
			{
				PreConfig: func() { pve.HoldNextTask("qmclone") },
				Config:    config,
				ExpectError: errorText("waiting for Proxmox task qmclone", "context deadline exceeded",
					"The create ran past timeouts.create. The VM exists and is kept in the state, tainted: raise timeouts.create"),
			},
			taintedThenReplaced(t, name, config),
		},
	})
}

func TestAccPassthroughVM_cloneCutShortByCtrlCIsKeptTainted(t *testing.T) {
	testAccPreCheck(t)
	const name = "interrupted"
	ctx := context.Background()
	tf, reattach := terraformInit(t, `provider "gpu" {}`+"\n"+pveVM(name, "", pveemu.NodeA6000, orphanGPU))

	// The clone is answered; while its task runs, Ctrl-C: tfexec sends
	// Terraform SIGINT when its context ends, and Terraform stops the
	// provider, which ends the create's context.
	pve.HoldNextTask("qmclone")
	t.Cleanup(pve.ReleaseHeldTasks)
	var stderr strings.Builder
	tf.SetStderr(&stderr)
	applyCtx, interrupt := context.WithCancel(ctx)
	applied := make(chan error, 1)
	go func() { applied <- tf.Apply(applyCtx, reattach) }()
	awaitHeldTask(t)
	interrupt()
	require.Error(t, <-applied, "the interrupted apply fails")
	out := strings.Join(strings.Fields(stderr.String()), " ")
	require.Contains(t, out, "waiting for Proxmox task qmclone", "the create was cut short while its clone ran")
	require.Contains(t, out, "context canceled")
	require.Contains(t, out, "The create was interrupted. The VM exists and is kept in the state, tainted")
	tf.SetStderr(io.Discard)

	state, err := tf.Show(ctx, reattach)
	require.NoError(t, err)
	require.NotNil(t, state.Values, "the interrupted apply left a state")
	var vmid int
	for _, r := range state.Values.RootModule.Resources {
		if r.Address == "gpu_passthrough_vm."+name {
			require.True(t, r.Tainted, "the VM is in the state, tainted")
			id, err := strconv.Atoi(fmt.Sprint(r.AttributeValues["vmid"]))
			require.NoError(t, err, "vmid in the state")
			vmid = id
		}
	}
	require.NotZero(t, vmid, "the interrupted clone is in the state")
	require.Equal(t, []int{vmid}, pveVMsNamed(pveemu.NodeA6000, name), "the VM in the state is the one Proxmox has")

	// terraform destroy removes it, once its clone is done.
	pve.ReleaseHeldTasks()
	require.NoError(t, tf.Destroy(ctx, reattach))
	require.Empty(t, pve.VMStatus(pveemu.NodeA6000, vmid), "destroy removed VM %d", vmid)
}

func TestAccPassthroughVM_cloneWhoseAnswerWasLostIsKeptTainted(t *testing.T) {
	testAccPreCheck(t)
	const name = "answer-lost"
	endpoint, certPEM := pve.AnswerDroppingProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/clone")
	})
	config := fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint         = %q
    api_token_id     = %q
    api_token_secret = %q
    ca_certificate   = %q
  }
}
`, endpoint, pveemu.TokenID, pveemu.TokenSecret, certPEM) + pveVM(name, "", pveemu.NodeA6000, orphanGPU)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             noVMNamed(name),
		Steps: []resource.TestStep{
			// PVE clones (to the VM ID the provider chose), and the answer
			// never comes back.
			{
				Config:      config,
				ExpectError: errorText("cloning", "EOF", "The VM exists and is kept in the state, tainted"),
			},
			taintedThenReplaced(t, name, config),
		},
	})
}

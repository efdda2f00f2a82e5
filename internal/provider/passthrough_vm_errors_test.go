package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

func TestPassthroughVMBackendErrorsLandOnTheirAttribute(t *testing.T) {
	seventeen := make([]proxmox.GPU, proxmox.MaxHostPCI+1)
	for i := range seventeen {
		seventeen[i] = proxmox.GPU{Mapping: fmt.Sprintf("gpu-%d", i)}
	}
	for _, tc := range []struct {
		description string
		err         error
		wantPath    string // "" for an error on the resource as a whole
		wantText    []string
	}{
		{"a mapping ID the backend refuses is on that gpu block's mapping",
			proxmox.ValidateGPUs([]proxmox.GPU{{Mapping: "a6000-0"}, {Mapping: "a"}}), "gpu[1].mapping", []string{"hostpci1 (mapping=a"}},
		{"a vGPU type the backend refuses is on its mdev",
			proxmox.ValidateGPUs([]proxmox.GPU{{PCIAddress: "0000:c1:00.0", Mdev: "nvidia-1155,x"}}), "gpu[0].mdev", []string{"mediated device"}},
		{"too many GPUs is on the gpu list", proxmox.ValidateGPUs(seventeen), "gpu", []string{"at most 16"}},
		{"a field error wrapped by the backend is found", fmt.Errorf("creating VM: %w", proxmox.ValidateGPUs([]proxmox.GPU{{}})),
			"gpu[0]", []string{"needs exactly one of a PCI mapping and a host PCI address"}},
		{"a change that needs a restart is on allow_restart, with the fix",
			&proxmox.RestartNeededError{Node: "pve", VMID: 200, Changes: []string{"hostpci0", "memory"}}, "allow_restart",
			[]string{"changes hostpci0, memory only while it is stopped", "Set allow_restart = true (the VM is stopped and started to apply hostpci0, memory)", "started = false"}},
		{"VM IDs used up is on vmid", fmt.Errorf("choosing a VM ID: %w", proxmox.ErrVMIDsTaken), "vmid", []string{"set vmid"}},
		{"any other error is on the resource", errors.New("500 internal error"), "", []string{"500 internal error"}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			require.Error(t, tc.err)
			diags := passthroughBackendError("updating Proxmox VM vm (pve/200)", tc.err)
			require.Len(t, diags.Errors(), 1)
			if tc.wantPath == "" {
				require.Empty(t, errorPaths(diags))
			} else {
				require.Equal(t, []string{tc.wantPath}, errorPaths(diags), errorDetails(diags))
			}
			for _, text := range tc.wantText {
				require.Contains(t, errorDetails(diags), text)
			}
		})
	}
}

package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// passthroughFieldAttributes are gpu_passthrough_vm's attributes for the
// backend's VMSpec fields (the GPU kinds below are under gpu[i]).
var passthroughFieldAttributes = map[proxmox.FieldKind]string{
	proxmox.FieldNode: "node", proxmox.FieldVMID: "vmid", proxmox.FieldName: "name", proxmox.FieldCores: "cores",
	proxmox.FieldSockets: "sockets", proxmox.FieldCPUType: "cpu_type", proxmox.FieldMemory: "memory_mib",
	proxmox.FieldMachine: "machine", proxmox.FieldBIOS: "bios", proxmox.FieldEFIDisk: "efi_disk", proxmox.FieldGPUs: "gpu",
	proxmox.FieldGPUMapping: "mapping", proxmox.FieldGPUPCIAddress: "pci_address", proxmox.FieldGPUMdev: "mdev",
}

// fieldPath is the attribute a backend field is set by.
func fieldPath(f proxmox.Field) path.Path {
	switch f.Kind {
	case proxmox.FieldGPU:
		return path.Root("gpu").AtListIndex(f.GPU)
	case proxmox.FieldGPUMapping, proxmox.FieldGPUPCIAddress, proxmox.FieldGPUMdev:
		return path.Root("gpu").AtListIndex(f.GPU).AtName(passthroughFieldAttributes[f.Kind])
	}
	if name, ok := passthroughFieldAttributes[f.Kind]; ok {
		return path.Root(name)
	}
	return path.Empty()
}

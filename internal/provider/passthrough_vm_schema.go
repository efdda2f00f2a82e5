package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// The values the schema offers, each listed once for its validator and its description.
var (
	passthroughBIOSes       = []string{"ovmf", "seabios"}
	passthroughNICModels    = []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"}
	passthroughDiskBuses    = []string{"scsi", "virtio", "sata", "ide"}
	passthroughDiskSlotExpr = regexp.MustCompile(`^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|ide[0-3])$`)

	// pciAddressPattern is a host PCI address as Proxmox writes it:
	// domain:bus:device for every function of a device ("0000:01:00"),
	// domain:bus:device.function for one ("0000:01:00.0").
	pciAddressPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f](\.[0-7])?$`)
	// pveMachinePattern is PVE's machine type pattern (qemu-server's
	// pve-qm-machine format, from the API schema).
	pveMachinePattern = regexp.MustCompile(`^(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?)$`)
	// q35MachinePattern are the machine types with a PCIe root bus.
	q35MachinePattern = regexp.MustCompile(`^(q35|pc-q35-.+)$`)
	// pveNamePattern is PVE's dns-name format for a VM name.
	pveNamePattern = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)
	// pveNodeNamePattern is PVE's pve-node format.
	pveNodeNamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)
	// pveStoragePattern is PVE's pve-storage-id format.
	pveStoragePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]$`)
	// pveMappingPattern is PVE's pve-configid format, which mapping IDs use.
	pveMappingPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]+$`)
	// pveTagPattern is PVE's pve-tag format.
	pveTagPattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)
)

const (
	// pveMinVMID and pveMaxVMID bound a VM ID (pve-vmid).
	pveMinVMID = 100
	pveMaxVMID = 999999999
)

func passthroughVMSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: fmt.Sprintf("A Proxmox VE virtual machine with NVIDIA GPUs passed through (`hostpci0`..`hostpci%d`), checked before ", proxmox.MaxHostPCI-1) +
			"it breaks. Everything Proxmox would only refuse with an HTTP 500 or at the VM's start (raw PCI addresses through an API " +
			"token, `pcie` on an i440fx machine, OVMF without an EFI disk, an IOMMU group shared with a device left behind, a GPU " +
			"already in a running VM, a vGPU type with no instances left, `rombar` silently off) is refused at plan time, or at apply " +
			"before anything is written when the plan cannot know yet; what another VM holds (a GPU, a VM ID, vGPU instances) is a " +
			"warning at plan time, as Terraform makes that same plan before a destroy, and the apply refuses it. Create or clone, " +
			"configure and start are each followed through their Proxmox task (UPID) to the task's own exit status and log.",
		Attributes: passthroughVMAttributes(),
		Blocks: map[string]schema.Block{
			"gpu": schema.ListNestedBlock{
				MarkdownDescription: fmt.Sprintf("A GPU passed through, in order: the first is `hostpci0`. At most %d. Exactly one of `mapping` (a ", proxmox.MaxHostPCI) +
					"cluster PCI resource mapping, which API tokens may use) and `pci_address` (a raw host address, which Proxmox lets only " +
					"`root@pam` with a password set). Adding, removing or changing one needs the VM stopped: see `allow_restart`.",
				Validators: []validator.List{listvalidator.SizeAtMost(proxmox.MaxHostPCI)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"mapping": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "ID of a cluster PCI resource mapping (Datacenter → Resource Mappings) with an entry on `node`, " +
							"e.g. `a6000-0`. The mapping's path decides which functions go along. Works with API tokens that have `Mapping.Use` on it.",
						Validators: []validator.String{
							stringvalidator.RegexMatches(pveMappingPattern, "must be a mapping ID: a letter, then at least one letter, digit, '-' or '_'"),
						},
					},
					"pci_address": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Host PCI address as `gpu_inventory` (source `proxmox`) lists it: `0000:01:00` for every function " +
							"of the device (the GPU and its audio function), `0000:01:00.0` for one. Must be an NVIDIA display or 3D controller. " +
							"Proxmox accepts raw addresses only from `root@pam` logged in with a password: with an API token, use `mapping`.",
						Validators: []validator.String{stringvalidator.RegexMatches(pciAddressPattern,
							"must be a PCI address in lowercase hex: 0000:01:00 (every function) or 0000:01:00.0 (one function)")},
					},
					"all_functions": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "With `pci_address`: pass every function of the device (`0000:01:00`), so the GPU's audio " +
							"function goes along and its IOMMU group is not split. `false` passes only the function named, which must then " +
							"be written `0000:01:00.0`. Defaults to `true`. With `mapping`, the mapping's path decides.",
					},
					"pcie": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "Attach as a PCI Express device (`pcie=1`), which needs `machine = \"q35\"`. Defaults to `true`.",
					},
					"primary_gpu": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Make it the guest's primary display (`x-vga=1`): no emulated VGA. At most one GPU. Defaults to `false`.",
					},
					"rombar": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "Map the device's ROM into the guest (`rombar`). Always sent explicitly, so it is never turned off " +
							"by an omission. Defaults to `true`.",
					},
					"mdev": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "NVIDIA vGPU (mediated device) type, e.g. `nvidia-1155`: the VM gets an instance of it instead of " +
							"the whole GPU. The type must exist on the device with instances left (`gpu_inventory` lists them).",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 128)},
					},
				}},
			},
			"clone": schema.ListNestedBlock{
				MarkdownDescription: "Clone a template (or VM) instead of creating an empty VM. Changing it replaces the VM (adding it to an imported VM does not).",
				Validators:          []validator.List{listvalidator.SizeAtMost(1)},
				PlanModifiers:       []planmodifier.List{requiresReplaceUnlessImported()},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"source": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Name (e.g. `ubuntu-2404-cloud`) or VM ID (e.g. `9000`) of the template on `node`.",
						Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)},
					},
					"full": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "Full clone (an independent copy of the disks) rather than a linked clone. Defaults to `true`.",
					},
				}},
			},
			"efi_disk": schema.ListNestedBlock{
				MarkdownDescription: "EFI variables disk (`efidisk0`, 4m type), which `bios = \"ovmf\"` needs so UEFI settings survive a " +
					"reboot. Changing it replaces the VM.",
				Validators:    []validator.List{listvalidator.SizeAtMost(1)},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"storage": schema.StringAttribute{
						Required: true, MarkdownDescription: "Storage of the disk, e.g. `local-lvm`.",
						Validators: []validator.String{stringvalidator.RegexMatches(pveStoragePattern, "must be a Proxmox storage ID, e.g. local-lvm")},
					},
					"pre_enrolled_keys": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Enroll the distribution and Microsoft Secure Boot keys (Secure Boot on). The NVIDIA driver's " +
							"kernel modules must then be signed. Defaults to `false`.",
					},
				}},
			},
			"disk": schema.ListNestedBlock{
				MarkdownDescription: "Disks of the VM. A cloned VM keeps the template's disks; a `disk` naming one of its slots " +
					"(e.g. `scsi0`) sets its size. Changing one replaces the VM (adding them to an imported VM does not).",
				PlanModifiers: []planmodifier.List{requiresReplaceUnlessImported()},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"slot": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Bus and index, e.g. `scsi0`, `virtio0`. Valid buses are: " + backtickList(passthroughDiskBuses) + ".",
						Validators: []validator.String{stringvalidator.RegexMatches(passthroughDiskSlotExpr,
							"must be a disk slot: scsi0..scsi30, virtio0..virtio15, sata0..sata5 or ide0..ide3")},
					},
					"storage": schema.StringAttribute{
						Required: true, MarkdownDescription: "Storage of the disk, e.g. `local-lvm`.",
						Validators: []validator.String{stringvalidator.RegexMatches(pveStoragePattern, "must be a Proxmox storage ID, e.g. local-lvm")},
					},
					"size_gib": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Required:   true, MarkdownDescription: "Size in GiB.",
						Validators: []validator.Int64{int64validator.Between(1, 131072)},
					},
				}},
			},
			"network": schema.ListNestedBlock{
				MarkdownDescription: "Network interfaces, in order: the first is `net0`. Changes in place.",
				Validators:          []validator.List{listvalidator.SizeAtMost(32)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"bridge": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("vmbr0"),
						MarkdownDescription: "Bridge, e.g. `vmbr0` (the default).",
						Validators:          []validator.String{stringvalidator.LengthBetween(1, 64)},
					},
					"model": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("virtio"),
						MarkdownDescription: "NIC model. Valid values are: " + backtickList(passthroughNICModels) + ". Defaults to `virtio`.",
						Validators:          []validator.String{stringvalidator.OneOf(passthroughNICModels...)},
					},
					"vlan": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Optional:   true, MarkdownDescription: "VLAN tag, 1 to 4094.",
						Validators: []validator.Int64{int64validator.Between(1, 4094)},
					},
					"firewall": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Apply the Proxmox firewall to this interface. Defaults to `false`.",
					},
				}},
			},
			"cloud_init": schema.ListNestedBlock{
				MarkdownDescription: "cloud-init settings of the guest (the template needs a cloud-init drive). With `user_data_file`, " +
					"examples/bootstrap/proxmox-cloud-init runs gpu-bootstrap in the guest. Changes in place, read by the guest at its next boot.",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"user": schema.StringAttribute{
						Optional: true, MarkdownDescription: "User whose SSH keys are set (`ciuser`), e.g. `ubuntu`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 64)},
					},
					"ssh_keys": schema.ListAttribute{
						Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Public SSH keys in OpenSSH format (`sshkeys`).",
						Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
					},
					"ip_config": schema.ListAttribute{
						Optional: true, ElementType: types.StringType,
						MarkdownDescription: "IP settings per `network`, in order (`ipconfig0`, `ipconfig1`, ...), e.g. `[\"ip=dhcp\"]` or " +
							"`[\"ip=192.0.2.10/24,gw=192.0.2.1\"]`.",
						Validators: []validator.List{listvalidator.SizeAtMost(32), listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 512))},
					},
					"storage": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Storage for a new cloud-init drive, e.g. `local-lvm`. Unset, the template's cloud-init drive is used.",
						Validators:          []validator.String{stringvalidator.RegexMatches(pveStoragePattern, "must be a Proxmox storage ID, e.g. local-lvm")},
					},
					"user_data_file": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Volume of a `#cloud-config` file on a storage with the `snippets` content type, e.g. " +
							"`local:snippets/gpu-user-data.yaml` (`cicustom user=`): examples/bootstrap/proxmox-cloud-init/user-data.yaml.",
						Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-_.]*:.+$`),
							"must be a storage volume: STORAGE:snippets/FILE, e.g. local:snippets/gpu-user-data.yaml")},
					},
				}},
			},
			"timeouts": resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
				"How long to wait. `create` bounds the create or clone, configure and start tasks (default 20m); `update` bounds the "+
					"configuration and, with `allow_restart`, the stop and start (default 20m); `delete` bounds stop and destroy (default 10m). "+
					"Positive durations as Go writes them, e.g. `90s`, `15m`."),
		},
	}
}

// requiresReplaceUnlessImported replaces the VM when a block that Proxmox
// cannot change in place changes, but not when the state has none of it
// because the VM was imported (an import does not read clone or disk).
func requiresReplaceUnlessImported() planmodifier.List {
	return listplanmodifier.RequiresReplaceIf(func(_ context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !req.StateValue.IsNull() && len(req.StateValue.Elements()) > 0
	}, "Changing it replaces the VM, unless the state has none (an imported VM).",
		"Changing it replaces the VM, unless the state has none (an imported VM).")
}

func passthroughVMAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed: true, MarkdownDescription: "`node/vmid`, the import ID.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"node": schema.StringAttribute{
			Required: true, MarkdownDescription: "Proxmox node the VM runs on (its GPUs are that node's), e.g. `pve-a6000`. Changing it replaces the VM.",
			Validators:    []validator.String{stringvalidator.RegexMatches(pveNodeNamePattern, "must be a Proxmox node name, e.g. pve1")},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"vmid": schema.Int64Attribute{
			CustomType: wholeNumberType{},
			Optional:   true, Computed: true,
			MarkdownDescription: "VM ID, 100 to 999999999. Unset, the cluster's next free ID (`/cluster/nextid`). Changing it replaces the VM.",
			Validators:          []validator.Int64{int64validator.Between(pveMinVMID, pveMaxVMID)},
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplaceIfConfigured()},
		},
		"name": schema.StringAttribute{
			Required: true, MarkdownDescription: "VM name, a DNS name, e.g. `gpu-worker-1`. Changes in place.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63),
				stringvalidator.RegexMatches(pveNamePattern, "must be a DNS name: letters, digits and '-', dot-separated")},
		},
		"cores": schema.Int64Attribute{
			CustomType: wholeNumberType{},
			Optional:   true, Computed: true, Default: int64default.StaticInt64(4),
			MarkdownDescription: "CPU cores per socket. Defaults to `4`. Changes in place (from the next start when the VM runs).",
			Validators:          []validator.Int64{int64validator.Between(1, 1024)},
		},
		"sockets": schema.Int64Attribute{
			CustomType: wholeNumberType{},
			Optional:   true, Computed: true, Default: int64default.StaticInt64(1),
			MarkdownDescription: "CPU sockets. Defaults to `1`. Changes in place (from the next start when the VM runs).",
			Validators:          []validator.Int64{int64validator.Between(1, 16)},
		},
		"cpu_type": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("host"),
			MarkdownDescription: "Emulated CPU type. Defaults to `host`, which the NVIDIA driver and CUDA want. Changes in place.",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 64)},
		},
		"memory_mib": schema.Int64Attribute{
			CustomType: wholeNumberType{},
			Optional:   true, Computed: true, Default: int64default.StaticInt64(8192),
			MarkdownDescription: "Memory in MiB, at least 1024. Ballooning is always off (`balloon=0`): a VM with a passed-through " +
				"device has all its memory pinned, so the balloon driver cannot give any back. Defaults to `8192`. Changes in place.",
			Validators: []validator.Int64{int64validator.Between(1024, 4194304)},
		},
		"machine": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("q35"),
			MarkdownDescription: "QEMU machine type: `q35` (the default, with PCI Express, which `pcie` needs), `pc` (i440fx), or a " +
				"versioned one such as `pc-q35-8.1`. Changing it replaces the VM.",
			Validators: []validator.String{stringvalidator.RegexMatches(pveMachinePattern,
				"must be a QEMU machine type of Proxmox: q35, pc, pc-q35-8.1 or pc-i440fx-8.1")},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"bios": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("ovmf"),
			MarkdownDescription: "Firmware. Valid values are: " + backtickList(passthroughBIOSes) + ". Defaults to `ovmf` (UEFI), which " +
				"modern GPUs boot best with and which needs `efi_disk`. Changing it replaces the VM.",
			Validators:    []validator.String{stringvalidator.OneOf(passthroughBIOSes...)},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"tags": schema.SetAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "Proxmox tags of the VM, lowercase, e.g. `[\"gpu\", \"terraform\"]`. Changes in place.",
			Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.RegexMatches(pveTagPattern,
				"must be a Proxmox tag: lowercase letters, digits and _ - + ."))},
		},
		"started": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Whether the VM runs. Defaults to `true`: create starts it, and a VM found stopped on refresh is started " +
				"by the next apply. `false` stops it (a hard stop).",
		},
		"onboot": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Start the VM when the node boots. Defaults to `false`. Changes in place.",
		},
		"allow_restart": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Let apply stop a running VM to make a change Proxmox applies only to a stopped VM (`gpu`, `cores`, " +
				"`sockets`, `cpu_type`, `memory_mib`), then start it again. Without this, such a change to a VM that runs and stays " +
				"running is a plan error (an apply error when the VM was started after the plan); with `started = false` in the same " +
				"change the VM is stopped first, and this is not needed. Defaults to `false`.",
		},
		"status": schema.StringAttribute{
			Computed: true, MarkdownDescription: "Proxmox status of the VM when last read: `running` or `stopped`.",
		},
		"gpus": schema.ListNestedAttribute{
			Computed: true,
			MarkdownDescription: "The GPUs as Proxmox has them, by `hostpci` index, with the host device each resolves to. A mapping " +
				"with one entry on `node` resolves to that entry. A mapping with several entries on `node` is a GPU pool: Proxmox gives " +
				"the VM the first entry no running VM holds when it starts, so while the VM runs `pci_address` is the device it got " +
				"(read from the QEMU monitor), and while it is stopped `pci_address` is empty and `candidates` lists what it may get.",
			NestedObject: schema.NestedAttributeObject{Attributes: passthroughGPUStatusAttributes()},
		},
		"ipv4": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "IPv4 addresses the QEMU guest agent reports (loopback left out); empty while the agent does not answer.",
		},
	}
}

func passthroughGPUStatusAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"hostpci": str("Key of the device in the VM's configuration, e.g. `hostpci0`."),
		"value":   str("The configuration line as Proxmox holds it, e.g. `mapping=a6000-0,pcie=1,rombar=1`."),
		"pci_address": str("Host PCI address of the GPU function the VM has, e.g. `0000:01:00.0`; empty when it cannot be told: a " +
			"stopped VM on a GPU pool (see `candidates`), a vGPU from a pool (the monitor names the mediated device, not its card), " +
			"or a device Proxmox did not report."),
		"candidates": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Host devices this GPU may be given at the VM's start, in the order Proxmox tries them: the paths of " +
				"the mapping's entries on `node` (several for a GPU pool, one otherwise), or the raw `pci_address`.",
		},
		"vendor_id":   str("PCI vendor ID, `0x10de` for NVIDIA."),
		"device_id":   str("PCI device ID, e.g. `0x2230`."),
		"product":     str("Product name as the node's PCI database names it, e.g. `GA102GL [RTX A6000]`."),
		"iommu_group": schema.Int64Attribute{Computed: true, MarkdownDescription: "IOMMU group of the device on the node."},
	}
}

// passthroughGPUStatusObjectType is the type of one element of gpus.
var passthroughGPUStatusObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"hostpci": types.StringType, "value": types.StringType, "pci_address": types.StringType, "vendor_id": types.StringType,
	"device_id": types.StringType, "product": types.StringType, "iommu_group": types.Int64Type,
	"candidates": types.ListType{ElemType: types.StringType},
}}

package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// passthroughVMModel is gpu_passthrough_vm's configuration, plan and state.
type passthroughVMModel struct {
	ID           types.String `tfsdk:"id"`
	Node         types.String `tfsdk:"node"`
	VMID         types.Int64  `tfsdk:"vmid"`
	Name         types.String `tfsdk:"name"`
	Cores        types.Int64  `tfsdk:"cores"`
	Sockets      types.Int64  `tfsdk:"sockets"`
	CPUType      types.String `tfsdk:"cpu_type"`
	MemoryMiB    types.Int64  `tfsdk:"memory_mib"`
	Machine      types.String `tfsdk:"machine"`
	BIOS         types.String `tfsdk:"bios"`
	Tags         types.Set    `tfsdk:"tags"`
	Started      types.Bool   `tfsdk:"started"`
	OnBoot       types.Bool   `tfsdk:"onboot"`
	AllowRestart types.Bool   `tfsdk:"allow_restart"`

	Status types.String `tfsdk:"status"`
	GPUs   types.List   `tfsdk:"gpus"`
	IPv4   types.List   `tfsdk:"ipv4"`

	GPU       []passthroughGPUModel       `tfsdk:"gpu"`
	Clone     []passthroughCloneModel     `tfsdk:"clone"`
	EFIDisk   []passthroughEFIDiskModel   `tfsdk:"efi_disk"`
	Disk      []passthroughDiskModel      `tfsdk:"disk"`
	Network   []passthroughNetworkModel   `tfsdk:"network"`
	CloudInit []passthroughCloudInitModel `tfsdk:"cloud_init"`
	Timeouts  timeouts.Value              `tfsdk:"timeouts"`
}

type passthroughGPUModel struct {
	Mapping      types.String `tfsdk:"mapping"`
	PCIAddress   types.String `tfsdk:"pci_address"`
	AllFunctions types.Bool   `tfsdk:"all_functions"`
	PCIE         types.Bool   `tfsdk:"pcie"`
	PrimaryGPU   types.Bool   `tfsdk:"primary_gpu"`
	ROMBar       types.Bool   `tfsdk:"rombar"`
	Mdev         types.String `tfsdk:"mdev"`
}

type passthroughCloneModel struct {
	Source types.String `tfsdk:"source"`
	Full   types.Bool   `tfsdk:"full"`
}

type passthroughEFIDiskModel struct {
	Storage         types.String `tfsdk:"storage"`
	PreEnrolledKeys types.Bool   `tfsdk:"pre_enrolled_keys"`
}

type passthroughDiskModel struct {
	Slot    types.String `tfsdk:"slot"`
	Storage types.String `tfsdk:"storage"`
	SizeGiB types.Int64  `tfsdk:"size_gib"`
}

type passthroughNetworkModel struct {
	Bridge   types.String `tfsdk:"bridge"`
	Model    types.String `tfsdk:"model"`
	VLAN     types.Int64  `tfsdk:"vlan"`
	Firewall types.Bool   `tfsdk:"firewall"`
}

type passthroughCloudInitModel struct {
	User         types.String `tfsdk:"user"`
	SSHKeys      types.List   `tfsdk:"ssh_keys"`
	IPConfig     types.List   `tfsdk:"ip_config"`
	Storage      types.String `tfsdk:"storage"`
	UserDataFile types.String `tfsdk:"user_data_file"`
}

// passthroughGPUStatusModel is one element of gpus.
type passthroughGPUStatusModel struct {
	HostPCI    string `tfsdk:"hostpci"`
	Value      string `tfsdk:"value"`
	PCIAddress string `tfsdk:"pci_address"`
	VendorID   string `tfsdk:"vendor_id"`
	DeviceID   string `tfsdk:"device_id"`
	Product    string `tfsdk:"product"`
	IOMMUGroup int64  `tfsdk:"iommu_group"`
	// Candidates are the host devices the line may be given at start.
	Candidates []string `tfsdk:"candidates"`
}

// passthroughVMID is the import ID, node/vmid.
func passthroughVMID(node string, vmid int64) string {
	return node + "/" + strconv.FormatInt(vmid, 10)
}

// parsePassthroughVMID splits an import ID node/vmid.
func parsePassthroughVMID(id string) (string, int64, error) {
	node, vmid, ok := strings.Cut(id, "/")
	n, err := strconv.ParseInt(vmid, 10, 64)
	if !ok || !pveNodeNamePattern.MatchString(node) || err != nil || n < pveMinVMID || n > pveMaxVMID {
		return "", 0, fmt.Errorf("import ID %q is not of the form node/vmid, e.g. \"pve1/200\" (a node name and a VM ID from %d to %d)", id, pveMinVMID, pveMaxVMID)
	}
	return node, n, nil
}

// describe is how diagnostics name the VM.
func (m *passthroughVMModel) describe() string {
	if m.VMID.IsNull() || m.VMID.IsUnknown() {
		return fmt.Sprintf("%q on node %s", m.Name.ValueString(), m.Node.ValueString())
	}
	return fmt.Sprintf("%d (%s) on node %s", m.VMID.ValueInt64(), m.Name.ValueString(), m.Node.ValueString())
}

// gpuSpecs is the gpu blocks as the backend takes them.
func (m *passthroughVMModel) gpuSpecs() []proxmox.GPU {
	out := make([]proxmox.GPU, 0, len(m.GPU))
	for _, g := range m.GPU {
		out = append(out, g.spec())
	}
	return out
}

func (g passthroughGPUModel) spec() proxmox.GPU {
	return proxmox.GPU{
		Mapping:      g.Mapping.ValueString(),
		PCIAddress:   g.PCIAddress.ValueString(),
		Mdev:         g.Mdev.ValueString(),
		PCIE:         boolOr(g.PCIE, true),
		PrimaryGPU:   g.PrimaryGPU.ValueBool(),
		ROMBar:       boolOr(g.ROMBar, true),
		AllFunctions: g.PCIAddress.ValueString() != "" && boolOr(g.AllFunctions, true),
	}
}

// boolOr is b's value, or def when b is null or unknown (a default not yet applied).
func boolOr(b types.Bool, def bool) bool {
	if b.IsNull() || b.IsUnknown() {
		return def
	}
	return b.ValueBool()
}

// stringOr is s's value, or def when s is null or unknown.
func stringOr(s types.String, def string) string {
	if s.IsNull() || s.IsUnknown() {
		return def
	}
	return s.ValueString()
}

// toSpec is the VM as the backend takes it.
func (m *passthroughVMModel) toSpec(ctx context.Context) proxmox.VMSpec {
	spec := proxmox.VMSpec{
		Node:      m.Node.ValueString(),
		VMID:      int(m.VMID.ValueInt64()),
		Name:      m.Name.ValueString(),
		Cores:     int(m.Cores.ValueInt64()),
		Sockets:   int(m.Sockets.ValueInt64()),
		CPUType:   m.CPUType.ValueString(),
		MemoryMiB: int(m.MemoryMiB.ValueInt64()),
		Machine:   m.Machine.ValueString(),
		BIOS:      m.BIOS.ValueString(),
		Tags:      stringsOf(ctx, m.Tags),
		Started:   m.Started.ValueBool(),
		OnBoot:    m.OnBoot.ValueBool(),
		GPUs:      m.gpuSpecs(),
	}
	for _, c := range m.Clone {
		spec.Clone = &proxmox.Clone{Source: c.Source.ValueString(), Full: boolOr(c.Full, true)}
	}
	for _, e := range m.EFIDisk {
		spec.EFIDisk = &proxmox.EFIDisk{Storage: e.Storage.ValueString(), PreEnrolledKeys: e.PreEnrolledKeys.ValueBool()}
	}
	for _, d := range m.Disk {
		spec.Disks = append(spec.Disks, proxmox.Disk{Interface: d.Slot.ValueString(), Storage: d.Storage.ValueString(), SizeGiB: int(d.SizeGiB.ValueInt64())})
	}
	for _, n := range m.Network {
		spec.Networks = append(spec.Networks, proxmox.Network{
			Model: stringOr(n.Model, "virtio"), Bridge: stringOr(n.Bridge, "vmbr0"), VLAN: int(n.VLAN.ValueInt64()), Firewall: n.Firewall.ValueBool(),
		})
	}
	for _, c := range m.CloudInit {
		spec.CloudInit = &proxmox.CloudInit{
			Storage: c.Storage.ValueString(), User: c.User.ValueString(), SSHKeys: stringsOf(ctx, c.SSHKeys),
			IPConfig: stringsOf(ctx, c.IPConfig), UserDataFile: c.UserDataFile.ValueString(),
		}
	}
	return spec
}

// setFromLive records what Proxmox reports. Attributes PVE reports as the
// user wrote them are taken from live, so changes made outside Terraform
// show in the plan: name, CPU, memory, tags, onboot, the GPUs (keeping the
// user's spelling of an address that means the same device) and whether
// the VM runs. Disks, cloud-init and the clone source stay as planned
// (PVE reports a cloned template's disks and encodes cloud-init values);
// an import (no prior GPUs, no name) takes everything PVE has.
func (m *passthroughVMModel) setFromLive(live proxmox.VM, facts *proxmox.NodeFacts) diag.Diagnostics {
	var diags diag.Diagnostics
	imported := m.Name.IsNull()
	m.Node = types.StringValue(live.Node)
	m.VMID = types.Int64Value(int64(live.VMID))
	m.ID = types.StringValue(passthroughVMID(live.Node, int64(live.VMID)))
	if live.Name != "" || imported {
		m.Name = types.StringValue(live.Name)
	}
	if live.Cores > 0 {
		m.Cores = types.Int64Value(int64(live.Cores))
	}
	if live.Sockets > 0 {
		m.Sockets = types.Int64Value(int64(live.Sockets))
	}
	if live.CPUType != "" {
		m.CPUType = types.StringValue(live.CPUType)
	}
	if live.MemoryMiB > 0 {
		m.MemoryMiB = types.Int64Value(int64(live.MemoryMiB))
	}
	if live.Machine != "" {
		m.Machine = types.StringValue(live.Machine)
	} else if imported {
		m.Machine = types.StringValue("pc") // PVE's default: i440fx
	}
	if live.BIOS != "" {
		m.BIOS = types.StringValue(live.BIOS)
	} else if imported {
		m.BIOS = types.StringValue("seabios")
	}
	if len(live.Tags) > 0 || (!m.Tags.IsNull() && len(m.Tags.Elements()) > 0) {
		tags, d := types.SetValueFrom(context.Background(), types.StringType, live.Tags)
		diags.Append(d...)
		m.Tags = tags
	}
	m.OnBoot = types.BoolValue(live.OnBoot)
	m.Started = types.BoolValue(live.Status == "running")
	m.Status = types.StringValue(live.Status)
	if m.AllowRestart.IsNull() {
		m.AllowRestart = types.BoolValue(false)
	}
	if imported {
		m.importBlocks(live)
	}
	m.GPU = gpuModelsFromLive(m.GPU, live.GPUs)

	statuses := gpuStatuses(live, facts)
	gpus, d := types.ListValueFrom(context.Background(), passthroughGPUStatusObjectType, statuses)
	diags.Append(d...)
	m.GPUs = gpus
	ipv4 := live.IPv4
	if ipv4 == nil {
		ipv4 = []string{}
	}
	list, d := types.ListValueFrom(context.Background(), types.StringType, ipv4)
	diags.Append(d...)
	m.IPv4 = list
	return diags
}

// efiDiskDiffers says how the VM's EFI disk differs from efi_disk, or "":
// a clone keeps its template's.
func (m *passthroughVMModel) efiDiskDiffers(live proxmox.VM) string {
	e := live.EFIDisk
	if e == nil || len(m.EFIDisk) != 1 {
		return ""
	}
	want := m.EFIDisk[0]
	if want.Storage.ValueString() == e.Storage && want.PreEnrolledKeys.ValueBool() == e.PreEnrolledKeys {
		return ""
	}
	return fmt.Sprintf("the VM's EFI disk is on %s with pre_enrolled_keys = %t (a clone keeps its template's), and efi_disk says %s with %t: "+
		"write efi_disk as the template has it", e.Storage, e.PreEnrolledKeys, want.Storage.ValueString(), want.PreEnrolledKeys.ValueBool())
}

// refreshEFIDisk records the VM's EFI disk, so a difference shows in the plan.
func (m *passthroughVMModel) refreshEFIDisk(live proxmox.VM) {
	if e := live.EFIDisk; e != nil && len(m.EFIDisk) == 1 {
		m.EFIDisk[0].Storage, m.EFIDisk[0].PreEnrolledKeys = types.StringValue(e.Storage), types.BoolValue(e.PreEnrolledKeys)
	}
}

// importBlocks fills the blocks an import has no configuration for.
func (m *passthroughVMModel) importBlocks(live proxmox.VM) {
	if e := live.EFIDisk; e != nil {
		m.EFIDisk = []passthroughEFIDiskModel{{Storage: types.StringValue(e.Storage), PreEnrolledKeys: types.BoolValue(e.PreEnrolledKeys)}}
	}
	m.Network = nil
	for _, n := range live.Networks {
		vlan := types.Int64Null()
		if n.VLAN > 0 {
			vlan = types.Int64Value(int64(n.VLAN))
		}
		m.Network = append(m.Network, passthroughNetworkModel{
			Bridge: types.StringValue(n.Bridge), Model: types.StringValue(n.Model), VLAN: vlan, Firewall: types.BoolValue(n.Firewall),
		})
	}
	if m.Tags.IsNull() && len(live.Tags) == 0 {
		m.Tags = types.SetNull(types.StringType)
	}
}

// gpuModelsFromLive is the gpu blocks as PVE has them, in hostpci order,
// keeping prior's spelling where it means the same: "0000:01:00.0" with
// all_functions passes the same device as PVE's "0000:01:00".
func gpuModelsFromLive(prior []passthroughGPUModel, live []proxmox.GPU) []passthroughGPUModel {
	var out []passthroughGPUModel
	for i, g := range live {
		m := passthroughGPUModel{
			Mapping: types.StringNull(), PCIAddress: types.StringNull(), Mdev: types.StringNull(),
			AllFunctions: types.BoolValue(true), PCIE: types.BoolValue(g.PCIE), PrimaryGPU: types.BoolValue(g.PrimaryGPU), ROMBar: types.BoolValue(g.ROMBar),
		}
		if g.Mapping != "" {
			m.Mapping = types.StringValue(g.Mapping)
		}
		if g.PCIAddress != "" {
			m.PCIAddress = types.StringValue(g.PCIAddress)
			m.AllFunctions = types.BoolValue(g.AllFunctions) // PVE passes every function of an address without one
		}
		if g.Mdev != "" {
			m.Mdev = types.StringValue(g.Mdev)
		}
		if i < len(prior) {
			p := prior[i]
			if g.PCIAddress != "" && p.PCIAddress.ValueString() != g.PCIAddress && sameDevice(p.PCIAddress.ValueString(), g.PCIAddress) &&
				boolOr(p.AllFunctions, true) == m.AllFunctions.ValueBool() {
				m.PCIAddress = p.PCIAddress
			}
			if g.Mapping != "" && !p.AllFunctions.IsNull() {
				m.AllFunctions = p.AllFunctions // ignored with a mapping: keep what was planned
			}
		}
		out = append(out, m)
	}
	return out
}

// sameDevice says whether two PCI addresses name the same device (bus and slot), whatever their functions.
func sameDevice(a, b string) bool {
	return proxmox.PCIDevice(proxmox.NormalizePCIAddress(a)) == proxmox.PCIDevice(proxmox.NormalizePCIAddress(b))
}

// gpusEqual says whether two lists of gpu blocks ask for the same devices.
func gpusEqual(a, b []passthroughGPUModel) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].spec() != b[i].spec() {
			return false
		}
	}
	return true
}

package proxmox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// configAsPVE turns parameters into a config as GET .../config returns it
// after allocation.
func configAsPVE(p map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	return out
}

func TestSpecOf_readsBackWhatVMParamsWrites(t *testing.T) {
	spec := VMSpec{
		Node: "pve-a6000", VMID: 101, Name: "gpu-vm", Cores: 8, Sockets: 1, CPUType: "host", MemoryMiB: 32768,
		Machine: "q35", BIOS: "ovmf", EFIDisk: &EFIDisk{Storage: "local-lvm", PreEnrolledKeys: true},
		Networks:  []Network{{Model: "virtio", Bridge: "vmbr0", VLAN: 10, Firewall: true}},
		CloudInit: &CloudInit{Storage: "local-lvm", User: "ubuntu", SSHKeys: []string{"ssh-ed25519 AAAAC3+/x= me@host"}, IPConfig: []string{"ip=dhcp"}, UserDataFile: "local:snippets/gpu.yaml"},
		Tags:      []string{"gpu", "terraform"}, OnBoot: true,
		GPUs: []GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}, {PCIAddress: "0000:02:00", PCIE: true, PrimaryGPU: true, ROMBar: true, AllFunctions: true}},
	}
	p := vmParams(spec)
	require.Equal(t, "0", p["balloon"], "ballooning is off with passthrough")
	require.Equal(t, "mapping=a6000-0,pcie=1,rombar=1", p["hostpci0"])
	require.Equal(t, "0000:02:00,pcie=1,x-vga=1,rombar=1", p["hostpci1"])
	for k, v := range allocParams(spec, nil) {
		p[k] = v
	}
	require.Equal(t, "local-lvm:1,efitype=4m,pre-enrolled-keys=1", p["efidisk0"])
	require.Equal(t, "local-lvm:cloudinit", p["ide2"])
	// PVE stores allocated volumes by name and adds the MAC to the NIC.
	p["efidisk0"] = "local-lvm:vm-101-disk-0,efitype=4m,pre-enrolled-keys=1,size=4M"
	p["ide2"] = "local-lvm:vm-101-cloudinit,media=cdrom"
	p["scsi0"] = "local-lvm:vm-101-disk-1,size=32G"
	p["net0"] = "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,tag=10"

	got := specOf("pve-a6000", 101, configAsPVE(p))
	want := spec
	want.Disks = []Disk{{Interface: "scsi0", Storage: "local-lvm", SizeGiB: 32}}
	require.Equal(t, want, got)
}

func TestConfigChanges_deletesRemovedGPUsOnly(t *testing.T) {
	current := map[string]any{"hostpci0": "mapping=a6000-0,pcie=1,rombar=1", "hostpci1": "0000:02:00,rombar=1", "cores": float64(4), "vga": "std", "balloon": "0", "agent": "1", "onboot": "0"}
	want := map[string]string{"hostpci0": "mapping=a6000-0,pcie=1,rombar=1", "cores": "8", "balloon": "0", "agent": "1", "onboot": "0"}
	set, del := configChanges(current, want)
	require.Equal(t, map[string]string{"cores": "8"}, set)
	require.Equal(t, []string{"hostpci1"}, del, "a key the provider does not manage (vga) stays")
}

func TestSizeGiB(t *testing.T) {
	for in, want := range map[string]int{"32G": 32, "512M": 1, "4M": 1, "1T": 1024, "": 0, "10": 10} {
		require.Equal(t, want, sizeGiB(in), in)
	}
}

func TestConfigChanges_keepsWhatPVERewrote(t *testing.T) {
	current := map[string]any{"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "agent": "enabled=1", "hostpci0": "mapping=a6000-0,rombar=1,pcie=1"}
	want := map[string]string{"net0": "virtio,bridge=vmbr0", "agent": "1", "hostpci0": "mapping=a6000-0,pcie=1,rombar=1"}
	set, del := configChanges(current, want)
	require.Empty(t, set, "a NIC's generated MAC, agent's long form and option order are no change")
	require.Empty(t, del)

	set, _ = configChanges(current, map[string]string{"net0": "virtio,bridge=vmbr1"})
	require.Equal(t, map[string]string{"net0": "virtio,bridge=vmbr1"}, set)
}

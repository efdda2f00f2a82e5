package nvml

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadPCIDevices(t *testing.T) {
	root := t.TempDir()
	writeSysfs(t, root,
		// A workstation card: VGA function plus its HDMI audio and USB-C functions.
		pciFunction{address: "0000:65:00.0", vendor: "0x10de", device: "0x2204", class: "0x030000", driver: "nvidia", numaNode: "-1"},
		pciFunction{address: "0000:65:00.1", vendor: "0x10de", device: "0x1aef", class: "0x040300", driver: "snd_hda_intel", numaNode: "-1"},
		pciFunction{address: "0000:65:00.2", vendor: "0x10de", device: "0x1ad8", class: "0x0c0330", numaNode: "-1"},
		// An NVSwitch (bridge class) is not a GPU.
		pciFunction{address: "0000:c4:00.0", vendor: "0x10de", device: "0x1af1", class: "0x068000", numaNode: "1"},
		// A data-center GPU on a platform that does not report NUMA.
		pciFunction{address: "0000:17:00.0", vendor: "0x10de", device: "0x20b0", class: "0x030200", driver: "nvidia"},
	)

	devices, err := readPCIDevices(root)
	require.NoError(t, err)
	require.Equal(t, []PCIDevice{
		{Address: "0000:17:00.0", DeviceID: "20b0", Class: "0302", Driver: "nvidia", NUMANode: -1},
		{Address: "0000:65:00.0", DeviceID: "2204", Class: "0300", Driver: "nvidia", NUMANode: -1},
	}, devices)
}

func TestReadPCIDevicesWithoutSysfs(t *testing.T) {
	devices, err := readPCIDevices(filepath.Join(t.TempDir(), "absent"))
	require.NoError(t, err, "a container without /sys has no PCI devices, which is not an error")
	require.Equal(t, []PCIDevice{}, devices)
}

func TestReadPCIDevicesUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-000 directory anyway")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "bus", "pci", "devices")
	require.NoError(t, os.MkdirAll(dir, 0o000))
	_, err := readPCIDevices(root)
	require.Error(t, err)
}

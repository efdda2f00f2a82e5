package nvml

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// This file reads the NVIDIA GPUs on the PCI bus from sysfs, independently of
// the driver, so "GPUs present, driver missing" (or bound to vfio-pci for
// passthrough) can be told from "no GPUs". It reads, per function under
// <root>/bus/pci/devices: vendor, class, device, numa_node and the driver
// symlink, as the kernel documents them in
// Documentation/ABI/testing/sysfs-bus-pci.

const (
	vendorNVIDIA = "10de"
	classVGA     = "0300" // VGA compatible controller
	class3D      = "0302" // 3D controller (data-center GPUs)
)

// readPCIDevices lists NVIDIA display and 3D functions, sorted by address. A
// machine without the sysfs PCI tree (a container without /sys) has none.
func readPCIDevices(sysfsRoot string) ([]PCIDevice, error) {
	dir := filepath.Join(sysfsRoot, "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []PCIDevice{}, nil
	}
	if err != nil {
		return []PCIDevice{}, fmt.Errorf("listing PCI devices: %w", err)
	}
	devices := []PCIDevice{}
	for _, e := range entries {
		fn := filepath.Join(dir, e.Name())
		if hexAttr(fn, "vendor") != vendorNVIDIA {
			continue
		}
		class := hexAttr(fn, "class") // "030200": base class, subclass, prog-if
		if len(class) < 4 {
			continue
		}
		class = class[:4]
		if class != classVGA && class != class3D {
			continue // HDMI audio, USB-C controller, NVSwitch, …
		}
		devices = append(devices, PCIDevice{
			Address:  strings.ToLower(e.Name()),
			DeviceID: hexAttr(fn, "device"),
			Class:    class,
			Driver:   boundDriver(fn),
			NUMANode: numaNode(fn),
		})
	}
	sort.Slice(devices, func(i, j int) bool { return devices[i].Address < devices[j].Address })
	return devices, nil
}

// hexAttr reads a sysfs attribute such as "0x10de\n" as "10de"; "" when it
// cannot be read.
func hexAttr(fn, name string) string {
	b, err := os.ReadFile(filepath.Join(fn, name))
	if err != nil {
		return ""
	}
	s := strings.ToLower(strings.TrimSpace(string(b)))
	return strings.TrimPrefix(s, "0x")
}

// boundDriver is the name of the driver bound to a function: the base name
// of the driver symlink's target ("nvidia", "vfio-pci"), "" when unbound.
func boundDriver(fn string) string {
	target, err := os.Readlink(filepath.Join(fn, "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

// numaNode is the function's NUMA node; -1 when the platform does not say.
func numaNode(fn string) int {
	b, err := os.ReadFile(filepath.Join(fn, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

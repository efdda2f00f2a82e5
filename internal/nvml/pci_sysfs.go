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
//
// Which functions count as GPUs, and their order, are go-nvlib's
// (pkg/nvpci GetGPUs, v0.13.0): vendor 0x10de, class exactly 0x030000 (VGA)
// or 0x030200 (3D), not an SR-IOV virtual function (no physfn link), sorted
// by the address read as a number. go-nvlib's scanner itself is not used
// (see doc.go): it also reads the config space, resource and IOMMU files and
// fails a device on any of them, where this one needs the four attributes
// above and reads a missing numa_node as -1. nvlib_pinned_test.go holds it
// to go-nvlib's choices.

const (
	vendorNVIDIA = "10de"
	classVGA     = "030000" // VGA compatible controller
	class3D      = "030200" // 3D controller (data-center GPUs)
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
		if class != classVGA && class != class3D {
			continue // HDMI audio, USB-C controller, NVSwitch, …
		}
		if _, err := os.Lstat(filepath.Join(fn, "physfn")); err == nil {
			continue // an SR-IOV virtual function of a GPU (vGPU), not a GPU
		}
		devices = append(devices, PCIDevice{
			Address:  strings.ToLower(e.Name()),
			DeviceID: hexAttr(fn, "device"),
			Class:    class[:4],
			Driver:   boundDriver(fn),
			NUMANode: numaNode(fn),
		})
	}
	sort.SliceStable(devices, func(i, j int) bool { return addressOrder(devices[i].Address) < addressOrder(devices[j].Address) })
	return devices, nil
}

// addressOrder is go-nvlib's sort key for a PCI address: its hex digits read
// as one number, so a five-digit domain (10000:, VMD) sorts after 0000:.
func addressOrder(address string) uint64 {
	digits := strings.NewReplacer(":", "", ".", "").Replace(address)
	n, _ := strconv.ParseUint(digits, 16, 64)
	return n
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

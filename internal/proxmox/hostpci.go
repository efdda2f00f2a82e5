package proxmox

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	pxapi "github.com/Telmate/proxmox-api-go/proxmox"
)

// This file is the one home of the hostpciN wire format: GPU is one
// hostpciN value, written by HostPCIValue and read back by ParseHostPCI
// (a VM's own lines and other guests' alike).

// MaxHostPCI is how many hostpciN entries a VM takes, hostpci0..hostpci15:
// qemu-server's $MAX_HOSTPCI_DEVICES (PVE/QemuServer/PCI.pm), 16 in every
// PVE release to date.
const MaxHostPCI = 16

// HostPCIValue is the hostpciN value for g: "mapping=a6000-0,pcie=1,rombar=1"
// or "0000:01:00,pcie=1,x-vga=1,rombar=1". rombar is always written, so
// the value reads back the same whatever default a reader assumes (PVE's is
// 1; Telmate's library takes an unset ROMbar as 0).
func HostPCIValue(g GPU) string {
	var b strings.Builder
	if g.Mapping != "" {
		b.WriteString("mapping=" + g.Mapping)
	} else {
		b.WriteString(hostAddress(g))
	}
	if g.Mdev != "" {
		b.WriteString(",mdev=" + g.Mdev)
	}
	if g.PCIE {
		b.WriteString(",pcie=1")
	}
	if g.PrimaryGPU {
		b.WriteString(",x-vga=1")
	}
	if g.ROMBar {
		b.WriteString(",rombar=1")
	} else {
		b.WriteString(",rombar=0")
	}
	return b.String()
}

// hostAddress is the host= part: with AllFunctions the function is dropped
// ("0000:01:00" passes every function of the device).
func hostAddress(g GPU) string {
	if g.AllFunctions {
		return PCIDevice(g.PCIAddress)
	}
	return g.PCIAddress
}

// ParseHostPCI reads a hostpciN value back into a GPU. PVE's defaults
// apply where a key is absent: pcie=0, x-vga=0, rombar=1. The host
// address is normalized (lowercase, with its domain); a device without a
// function reads as AllFunctions, as PVE passes all of its functions.
func ParseHostPCI(value string) (GPU, error) {
	o := splitOptions(value, "host")
	g := GPU{Mapping: o["mapping"], Mdev: o["mdev"], ROMBar: true}
	addresses := splitPCIList(o["host"])
	if g.Mapping == "" && len(addresses) == 0 {
		return GPU{}, fmt.Errorf("hostpci value %q names neither a mapping nor a host PCI address", value)
	}
	if len(addresses) > 0 {
		g.PCIAddress = strings.Join(addresses, ";")
		g.AllFunctions = !PCIHasFunction(addresses[0])
	}
	g.PCIE = o["pcie"] == "1"
	g.PrimaryGPU = o["x-vga"] == "1"
	if v, ok := o["rombar"]; ok {
		g.ROMBar = v == "1"
	}
	if g.Mapping != "" {
		g.AllFunctions = true // a mapping's path decides; report the default
	}
	return g, nil
}

// libraryPCI is g as the library's QemuPci, every option set, for the
// library's validators (ValidateGPUs); nothing is written through it.
func libraryPCI(g GPU) pxapi.QemuPci {
	pcie, primary, rombar := g.PCIE, g.PrimaryGPU, g.ROMBar
	var mdev *pxapi.PciMediatedDevice
	if g.Mdev != "" {
		m := pxapi.PciMediatedDevice(g.Mdev)
		mdev = &m
	}
	if g.Mapping != "" {
		id := pxapi.ResourceMappingPciID(g.Mapping)
		return pxapi.QemuPci{Mapping: &pxapi.QemuPciMapping{ID: &id, PCIe: &pcie, PrimaryGPU: &primary, ROMbar: &rombar, MDev: mdev}}
	}
	id := pxapi.PciID(hostAddress(g))
	return pxapi.QemuPci{Raw: &pxapi.QemuPciRaw{ID: &id, PCIe: &pcie, PrimaryGPU: &primary, ROMbar: &rombar, MDev: mdev}}
}

// ValidateGPUs checks the GPU entries with the library's own validators
// (PCI id syntax, mapping id, mdev name) and PVE's rules: at most
// MaxHostPCI, exactly one of a mapping and a host address each. Its error
// is a *FieldError.
func ValidateGPUs(gpus []GPU) error {
	if len(gpus) > MaxHostPCI {
		return fieldErrorf(Field{Kind: FieldGPUs}, "%d GPUs given, Proxmox VE takes at most %d (hostpci0..hostpci%d)", len(gpus), MaxHostPCI, MaxHostPCI-1)
	}
	for i, g := range gpus {
		if (g.Mapping == "") == (g.PCIAddress == "") {
			return fieldErrorf(GPUField(FieldGPU, i), "hostpci%d: needs exactly one of a PCI mapping and a host PCI address", i)
		}
		field := gpuAddressField(g, i)
		err := pxapi.PciMediatedDevice(g.Mdev).Validate()
		if err != nil {
			field = GPUField(FieldGPUMdev, i)
		} else {
			err = pxapi.QemuPciDevices{pxapi.QemuPciID(i): libraryPCI(g)}.Validate(nil)
		}
		if err != nil {
			return &FieldError{Field: field, Err: fmt.Errorf("hostpci%d (%s): %w", i, HostPCIValue(g), err)}
		}
	}
	return nil
}

// hostPCILines picks hostpciN out of a VM config.
func hostPCILines(config map[string]any) map[int]string {
	out := map[int]string{}
	for k, v := range config {
		n, ok := strings.CutPrefix(k, "hostpci")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= MaxHostPCI {
			continue
		}
		out[i] = configString(v)
	}
	return out
}

// gpusOf parses a config's hostpci lines in index order.
func gpusOf(lines map[int]string) []GPU {
	var out []GPU
	for _, i := range slices.Sorted(maps.Keys(lines)) {
		if g, err := ParseHostPCI(lines[i]); err == nil {
			out = append(out, g)
		}
	}
	return out
}

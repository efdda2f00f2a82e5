package proxmox

import (
	"slices"
	"strings"
)

// PCI addresses as Proxmox VE writes them in a hostpciN "host" value and a
// PCI mapping's path: qemu-server's PCIRE, [domain:]bus:slot[.function] in
// hex, several joined by ';'. An address without its function names every
// function of the device: parse_hostpci (PVE/QemuServer/PCI.pm) hands each
// id to SysFSTools::lspci, which lists all functions of a device given as
// bus:slot, and the VM gets them as one multifunction device; with
// ".function" it gets that function alone.

// NormalizePCIAddress is address in lowercase with the "0000:" domain
// PVE leaves off some ids ("01:00.0" -> "0000:01:00.0").
func NormalizePCIAddress(address string) string {
	address = strings.ToLower(strings.TrimSpace(address))
	if strings.Count(address, ":") == 1 {
		return "0000:" + address
	}
	return address
}

// PCIHasFunction says whether address names one function ("0000:01:00.1")
// rather than a whole device ("0000:01:00"). Only the part after the last
// ':' (slot.function) can hold a '.'.
func PCIHasFunction(address string) bool {
	return strings.Contains(address[strings.LastIndexByte(address, ':')+1:], ".")
}

// PCIDevice is address without its function: "0000:01:00.1" -> "0000:01:00".
func PCIDevice(address string) string {
	if !PCIHasFunction(address) {
		return address
	}
	return address[:strings.LastIndexByte(address, '.')]
}

// PrimaryFunction is the function an address means as a GPU: itself, or
// function 0 of a whole device.
func PrimaryFunction(address string) string {
	if address == "" || PCIHasFunction(address) {
		return address
	}
	return address + ".0"
}

// PCICovers says whether address (a function or a whole device) passes
// function, both as PVE writes them (case and domain aside).
func PCICovers(address, function string) bool {
	a, f := NormalizePCIAddress(address), NormalizePCIAddress(function)
	return a == f || (!PCIHasFunction(a) && PCIDevice(f) == a)
}

// PCIListCovers says whether an address of list (';'-separated, as a
// hostpci "host" value or a mapping's path) passes function.
func PCIListCovers(list, function string) bool {
	return slices.ContainsFunc(strings.Split(list, ";"), func(a string) bool {
		return strings.TrimSpace(a) != "" && PCICovers(a, function)
	})
}

// splitPCIList is a ';'-separated list of addresses (a hostpci "host"
// value or a mapping's path), each normalized.
func splitPCIList(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, NormalizePCIAddress(a))
		}
	}
	return out
}

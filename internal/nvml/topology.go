package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns how GPUs reach each other, in `nvidia-smi topo -m` terms.
// NVLinks win: two GPUs joined by n links are "NV<n>". GPUs whose links all
// go to NVSwitches (DGX/HGX A100 and later) reach every other switched GPU;
// they are "NV<n>" with n the smaller of their switch-link counts, as
// nvidia-smi shows NV12 between any two A100s of a DGX A100. Otherwise the
// PCIe path decides, from nvmlDeviceGetTopologyCommonAncestor:
//
//	TOPOLOGY_INTERNAL, TOPOLOGY_SINGLE -> PIX  (same board / one PCIe bridge)
//	TOPOLOGY_MULTIPLE                  -> PXB  (several PCIe bridges)
//	TOPOLOGY_HOSTBRIDGE                -> PHB  (a PCIe host bridge)
//	TOPOLOGY_NODE                      -> NODE (host bridges within a NUMA node)
//	TOPOLOGY_SYSTEM                    -> SYS  (across the CPU interconnect)
//
// A pair NVML says nothing about is left out.

// nvLinks is what one GPU's NVLinks reach.
type nvLinks struct {
	byPeer      map[string]int // peer PCI bus id (sysfs spelling) -> links
	switchLinks int            // links to NVSwitches
}

// readTopology links every pair of readable GPUs; handles[i] is nil for a
// GPU that could not be read.
func readTopology(devices []Device, handles []gonvml.Device) []Link {
	links := make([]nvLinks, len(handles))
	for i, h := range handles {
		if h != nil {
			links[i] = readNVLinks(h)
		}
	}
	var out []Link
	for i := range handles {
		for j := i + 1; j < len(handles); j++ {
			if handles[i] == nil || handles[j] == nil {
				continue
			}
			if level := linkLevel(handles[i], handles[j], links[i], links[j], devices[j].PCIBusID); level != "" {
				out = append(out, Link{GPU1: devices[i].Index, GPU2: devices[j].Index, Level: level})
			}
		}
	}
	return out
}

func linkLevel(a, b gonvml.Device, la, lb nvLinks, busIDB string) string {
	n := 0
	if busIDB != "" {
		n = la.byPeer[busIDB]
	}
	if n == 0 && la.switchLinks > 0 && lb.switchLinks > 0 {
		n = min(la.switchLinks, lb.switchLinks)
	}
	if n > 0 {
		return fmt.Sprintf("NV%d", n)
	}
	level, ret := call1(func() (gonvml.GpuTopologyLevel, gonvml.Return) { return a.GetTopologyCommonAncestor(b) })
	if ret != gonvml.SUCCESS {
		return ""
	}
	return pcieLevel(level)
}

func pcieLevel(level gonvml.GpuTopologyLevel) string {
	switch level {
	case gonvml.TOPOLOGY_INTERNAL, gonvml.TOPOLOGY_SINGLE:
		return "PIX"
	case gonvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case gonvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case gonvml.TOPOLOGY_NODE:
		return "NODE"
	case gonvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return ""
}

// readNVLinks counts a GPU's active NVLinks by what is at their other end.
func readNVLinks(dev gonvml.Device) nvLinks {
	var l nvLinks
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		state, ret := call1(func() (gonvml.EnableState, gonvml.Return) { return dev.GetNvLinkState(link) })
		if ret == gonvml.ERROR_INVALID_ARGUMENT || ret == gonvml.ERROR_FUNCTION_NOT_FOUND {
			break // past the GPU's last link, or no NVLink API at all
		}
		if ret != gonvml.SUCCESS || state != gonvml.FEATURE_ENABLED {
			continue
		}
		kind, ret := call1(func() (gonvml.IntNvLinkDeviceType, gonvml.Return) { return dev.GetNvLinkRemoteDeviceType(link) })
		if ret == gonvml.SUCCESS && kind == gonvml.NVLINK_DEVICE_TYPE_SWITCH {
			l.switchLinks++
			continue
		}
		pci, ret := call1(func() (gonvml.PciInfo, gonvml.Return) { return dev.GetNvLinkRemotePciInfo(link) })
		if ret != gonvml.SUCCESS {
			continue
		}
		if l.byPeer == nil {
			l.byPeer = map[string]int{}
		}
		l.byPeer[busIDFromPCIInfo(pci)]++
	}
	return l
}

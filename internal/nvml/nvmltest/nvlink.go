package nvmltest

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// This file owns NVLinks between the fleet's GPUs. A GPU answers for link
// indices 0 to len(NVLinks)-1 and ERROR_INVALID_ARGUMENT past its last link,
// as NVML does; a GPU without NVLinks answers ERROR_NOT_SUPPORTED for every
// link, as a PCIe GPU without a bridge does.

// NVLink is one link of a GPU, with its error counters
// (nvmlDeviceGetNvLinkErrorCounter), which tests may raise.
type NVLink struct {
	Peer     int  // index of the GPU at the other end
	Down     bool // nvmlDeviceGetNvLinkState answers disabled
	CRCFlit  uint64
	CRCData  uint64
	Replay   uint64
	Recovery uint64
}

// ConnectNVLink joins GPUs a and b by links more NVLinks, numbered after
// the ones each already has. `nvidia-smi topo -m` and Snapshot's topology
// then show NV<links> between them.
func (f *Fleet) ConnectNVLink(a, b int, links int) {
	if a == b || links <= 0 {
		panic(fmt.Sprintf("nvmltest: ConnectNVLink(%d, %d, %d) needs two GPUs and at least one link", a, b, links))
	}
	for _, end := range [][2]int{{a, b}, {b, a}} {
		g := f.GPUs[end[0]]
		g.mu.Lock()
		for range links {
			g.NVLinks = append(g.NVLinks, NVLink{Peer: end[1]})
		}
		g.mu.Unlock()
	}
}

func (f *Fleet) wireNVLink(dev *dgxa100.Device, gpu *GPU) {
	// link returns the link, or what NVML answers for a link index the
	// GPU does not have. gpu.mu must be held.
	link := func(i int) (*NVLink, gonvml.Return) {
		switch {
		case gpu.Lost:
			return nil, gonvml.ERROR_GPU_IS_LOST
		case len(gpu.NVLinks) == 0:
			return nil, gonvml.ERROR_NOT_SUPPORTED
		case i < 0 || i >= len(gpu.NVLinks):
			return nil, gonvml.ERROR_INVALID_ARGUMENT
		}
		return &gpu.NVLinks[i], gonvml.SUCCESS
	}
	dev.GetNvLinkStateFunc = func(i int) (gonvml.EnableState, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		l, ret := link(i)
		if ret != gonvml.SUCCESS {
			return 0, ret
		}
		return enable(!l.Down), gonvml.SUCCESS
	}
	dev.GetNvLinkRemoteDeviceTypeFunc = func(i int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		_, ret := link(i)
		return gonvml.NVLINK_DEVICE_TYPE_GPU, ret
	}
	dev.GetNvLinkRemotePciInfoFunc = func(i int) (gonvml.PciInfo, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		l, ret := link(i)
		if ret != gonvml.SUCCESS {
			return gonvml.PciInfo{}, ret
		}
		return pciInfo(f.Device(l.Peer).PciBusID), gonvml.SUCCESS
	}
	dev.GetNvLinkErrorCounterFunc = func(i int, counter gonvml.NvLinkErrorCounter) (uint64, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		l, ret := link(i)
		if ret != gonvml.SUCCESS {
			return 0, ret
		}
		switch counter {
		case gonvml.NVLINK_ERROR_DL_CRC_FLIT:
			return l.CRCFlit, gonvml.SUCCESS
		case gonvml.NVLINK_ERROR_DL_CRC_DATA:
			return l.CRCData, gonvml.SUCCESS
		case gonvml.NVLINK_ERROR_DL_REPLAY:
			return l.Replay, gonvml.SUCCESS
		case gonvml.NVLINK_ERROR_DL_RECOVERY:
			return l.Recovery, gonvml.SUCCESS
		}
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
}

package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

func TestTopologyWithoutNVSwitch(t *testing.T) {
	// Four PCIe GPUs: 0 and 1 joined by an NVLink bridge of two links, the
	// rest reaching each other over PCIe.
	server := newDGXA100(t)
	server.Devices = [8]gonvml.Device{}
	for i := 0; i < 4; i++ {
		d := dgxa100.NewDevice(i)
		fillDevice(d, i)
		server.Devices[i] = d
	}
	server.DeviceGetCountFunc = func() (int, gonvml.Return) { return 4, gonvml.SUCCESS }
	bridged := map[int]int{0: 1, 1: 0}
	for i := 0; i < 4; i++ {
		d := device(server, i)
		d.GetNvLinkStateFunc = func(link int) (gonvml.EnableState, gonvml.Return) {
			if _, ok := bridged[i]; !ok {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			if link >= 4 {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			if link >= 2 {
				return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
			}
			return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
			return gonvml.NVLINK_DEVICE_TYPE_GPU, gonvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(int) (gonvml.PciInfo, gonvml.Return) {
			return pciInfo(dgxBusIDs[bridged[i]], 0x20B010DE), gonvml.SUCCESS
		}
		levels := map[int]gonvml.GpuTopologyLevel{1: gonvml.TOPOLOGY_SINGLE, 2: gonvml.TOPOLOGY_HOSTBRIDGE, 3: gonvml.TOPOLOGY_SYSTEM}
		d.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
			peer := nvmltest.Mock(other).Index
			if i == 2 && peer == 3 {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return levels[peer], gonvml.SUCCESS
		}
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.Equal(t, []Link{
		{GPU1: 0, GPU2: 1, Level: "NV2"},
		{GPU1: 0, GPU2: 2, Level: "PHB"},
		{GPU1: 0, GPU2: 3, Level: "SYS"},
		{GPU1: 1, GPU2: 2, Level: "PHB"},
		{GPU1: 1, GPU2: 3, Level: "SYS"},
		// 2-3: NVML does not say, so no entry.
	}, snap.Topology)
}

func TestPCIeLevels(t *testing.T) {
	tests := map[gonvml.GpuTopologyLevel]string{
		gonvml.TOPOLOGY_INTERNAL:    "PIX",
		gonvml.TOPOLOGY_SINGLE:      "PIX",
		gonvml.TOPOLOGY_MULTIPLE:    "PXB",
		gonvml.TOPOLOGY_HOSTBRIDGE:  "PHB",
		gonvml.TOPOLOGY_NODE:        "NODE",
		gonvml.TOPOLOGY_SYSTEM:      "SYS",
		gonvml.GpuTopologyLevel(99): "",
	}
	for level, want := range tests {
		require.Equal(t, want, pcieLevel(level), "level %d", level)
	}
}

func TestTopologyOfNVLinkedGPUs(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.ConnectNVLink(0, 1, 4)
	fleet.ConnectNVLink(0, 2, 2)
	fleet.ConnectNVLink(0, 1, 2) // more links between the same pair
	snap, err := New(Options{Lib: fleet.Server, SysfsRoot: t.TempDir()}).Snapshot()
	require.NoError(t, err)
	levels := map[[2]int]string{}
	for _, l := range snap.Topology {
		levels[[2]int{l.GPU1, l.GPU2}] = l.Level
	}
	require.Equal(t, "NV6", levels[[2]int{0, 1}])
	require.Equal(t, "NV2", levels[[2]int{0, 2}])
	require.Equal(t, "NODE", levels[[2]int{1, 2}], "GPUs without a link between them meet over PCIe")
	require.Equal(t, "SYS", levels[[2]int{0, 4}])
}

package nvml

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// dgxBusIDs are the GPU PCI addresses of a DGX A100, as NVML spells them
// (eight-digit domain, upper-case hex).
var dgxBusIDs = [8]string{
	"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
	"00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0",
}

// a100NVLinks is how many NVLinks an A100 has; on a DGX A100 all of them go
// to the six NVSwitches, two per switch.
const a100NVLinks = 12

// testUUID is the deterministic UUID the fixture gives GPU i (the mock's are
// random).
func testUUID(i int) string {
	return fmt.Sprintf("GPU-a100a100-0000-4000-8000-%012d", i)
}

// newDGXA100 returns go-nvml's DGX A100 mock with every call Snapshot makes
// answered by a healthy, idle GPU: deterministic UUIDs, DGX A100 bus ids, 12
// NVLinks per GPU to NVSwitches, persistence on, ECC on without errors, one
// process on GPU 3. Tests replace single Func fields to model what they need.
func newDGXA100(tb testing.TB) *dgxa100.Server {
	tb.Helper()
	server := dgxa100.New()
	server.SystemGetProcessNameFunc = func(pid int) (string, gonvml.Return) {
		if pid == 4242 {
			return "python3", gonvml.SUCCESS
		}
		return "", gonvml.ERROR_NOT_FOUND
	}
	for i := range server.Devices {
		fillDevice(device(server, i), i)
	}
	return server
}

// device is mocked GPU i.
func device(server *dgxa100.Server, i int) *dgxa100.Device {
	return nvmltest.Mock(server.Devices[i])
}

func fillDevice(d *dgxa100.Device, i int) {
	d.UUID = testUUID(i)
	busID := dgxBusIDs[i]
	d.PciBusID = normalizeBusID(busID)
	d.MemoryInfo = gonvml.Memory{Total: 40960 * mib, Free: 40960 * mib, Used: 0}
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		return pciInfo(busID, 0x20B010DE), gonvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return gonvml.Utilization{Gpu: 0, Memory: 0}, gonvml.SUCCESS
	}
	d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		return uint32(30 + i), gonvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 55123, gonvml.SUCCESS }
	d.GetPowerManagementLimitFunc = func() (uint32, gonvml.Return) { return 400000, gonvml.SUCCESS }
	d.GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, gonvml.Return) {
		return 100000, 400000, gonvml.SUCCESS
	}
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return gonvml.FEATURE_ENABLED, gonvml.SUCCESS }
	d.GetComputeModeFunc = func() (gonvml.ComputeMode, gonvml.Return) { return gonvml.COMPUTEMODE_DEFAULT, gonvml.SUCCESS }
	d.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_ENABLED, gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) {
		return 0, gonvml.SUCCESS
	}
	// Ampere retires no pages; it remaps rows instead.
	d.GetRetiredPagesPendingStatusFunc = func() (gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_DISABLED, gonvml.ERROR_NOT_SUPPORTED
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 0, false, false, gonvml.SUCCESS }
	clocks := map[gonvml.ClockType]uint32{gonvml.CLOCK_GRAPHICS: 210, gonvml.CLOCK_SM: 210, gonvml.CLOCK_MEM: 1215}
	maxClocks := map[gonvml.ClockType]uint32{gonvml.CLOCK_GRAPHICS: 1410, gonvml.CLOCK_SM: 1410, gonvml.CLOCK_MEM: 1215}
	appClocks := map[gonvml.ClockType]uint32{gonvml.CLOCK_GRAPHICS: 1095, gonvml.CLOCK_MEM: 1215}
	d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) { return clocks[c], gonvml.SUCCESS }
	d.GetMaxClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) { return maxClocks[c], gonvml.SUCCESS }
	d.GetApplicationsClockFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) { return appClocks[c], gonvml.SUCCESS }
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		if i == 3 {
			return []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1024 * mib}}, gonvml.SUCCESS
		}
		return nil, gonvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(link int) (gonvml.EnableState, gonvml.Return) {
		if link >= a100NVLinks {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(link int) (gonvml.PciInfo, gonvml.Return) {
		return pciInfo(fmt.Sprintf("00000000:%02X:00.0", 0xC4+link/2), 0x1AF110DE), gonvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		peer := nvmltest.Mock(other)
		switch {
		case d.Index/2 == peer.Index/2:
			return gonvml.TOPOLOGY_MULTIPLE, gonvml.SUCCESS
		case d.Index/4 == peer.Index/4:
			return gonvml.TOPOLOGY_NODE, gonvml.SUCCESS
		}
		return gonvml.TOPOLOGY_SYSTEM, gonvml.SUCCESS
	}
}

// pciInfo is NVML's PCI info for a bus id.
func pciInfo(busID string, deviceID uint32) gonvml.PciInfo {
	var p gonvml.PciInfo
	for i := 0; i < len(busID) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(busID[i])
	}
	p.PciDeviceId = deviceID
	return p
}

// pciFunction is one PCI function in a fake sysfs tree.
type pciFunction struct {
	address  string // "0000:07:00.0"
	vendor   string // "0x10de"
	device   string // "0x20b0"
	class    string // "0x030200"
	driver   string // "" when unbound
	numaNode string // "" leaves numa_node out
	physfn   string // the physical function's address for an SR-IOV virtual function
}

// writeSysfs lays out functions as the kernel does: the device directories
// under devices/pci0000:00/, bus/pci/devices/<address> symlinks to them, and
// a driver symlink to bus/pci/drivers/<name> in each bound function.
func writeSysfs(t testing.TB, root string, functions ...pciFunction) {
	t.Helper()
	busDir := filepath.Join(root, "bus", "pci", "devices")
	require.NoError(t, os.MkdirAll(busDir, 0o755))
	for _, f := range functions {
		dir := filepath.Join(root, "devices", "pci0000:00", f.address)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		attrs := map[string]string{"vendor": f.vendor, "device": f.device, "class": f.class, "numa_node": f.numaNode}
		for name, value := range attrs {
			if value != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(value+"\n"), 0o444))
			}
		}
		if f.driver != "" {
			driverDir := filepath.Join(root, "bus", "pci", "drivers", f.driver)
			require.NoError(t, os.MkdirAll(driverDir, 0o755))
			require.NoError(t, os.Symlink(filepath.Join("..", "..", "..", "bus", "pci", "drivers", f.driver), filepath.Join(dir, "driver")))
		}
		if f.physfn != "" {
			require.NoError(t, os.Symlink(filepath.Join("..", f.physfn), filepath.Join(dir, "physfn")))
		}
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "..", "devices", "pci0000:00", f.address), filepath.Join(busDir, f.address)))
	}
}

// dgxSysfs is the sysfs of a DGX A100 with the nvidia driver bound to every
// GPU: two GPUs per PCIe switch, each pair on its own NUMA node.
func dgxSysfs(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	var functions []pciFunction
	for i, busID := range dgxBusIDs {
		functions = append(functions, pciFunction{
			address: normalizeBusID(busID), vendor: "0x10de", device: "0x20b0", class: "0x030200",
			driver: "nvidia", numaNode: fmt.Sprint([]int{3, 3, 1, 1, 7, 7, 5, 5}[i]),
		})
	}
	writeSysfs(t, root, functions...)
	return root
}

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Snapshot reads the driver, every GPU, how the GPUs are linked and the
// NVIDIA functions on the PCI bus. A missing driver is a state
// (Driver.Loaded=false, no Devices, PCI still listed); a GPU that cannot be
// read is listed with Lost/Error set while the others are read normally.
// The error is for what makes the snapshot itself untrustworthy: NVML
// initialized but cannot count the GPUs, or sysfs cannot be read.
func (g *GPUs) Snapshot() (Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()

	var snap Snapshot
	snap.Devices = []Device{}
	pci, pciErr := readPCIDevices(g.sysfsRoot)
	snap.PCI = pci

	if !g.ensureInit() {
		snap.Driver = Driver{Loaded: false, Reason: g.reason}
		return snap, pciErr
	}
	snap.Driver = g.readDriver()

	count, ret := call1(g.lib.DeviceGetCount)
	if ret != gonvml.SUCCESS {
		return snap, fmt.Errorf("counting GPUs through NVML: %w", explain(ret))
	}
	handles := make([]gonvml.Device, count)
	names := &processNames{lib: g.lib}
	for i := 0; i < count; i++ {
		dev, ret := call1(func() (gonvml.Device, gonvml.Return) { return g.lib.DeviceGetHandleByIndex(i) })
		if ret != gonvml.SUCCESS {
			snap.Devices = append(snap.Devices, unreadableDevice(i, "getting the device handle", ret))
			continue
		}
		d := readDevice(dev, i, &g.state, names)
		if d.Error == "" {
			handles[i] = dev
		}
		snap.Devices = append(snap.Devices, d)
	}
	snap.Topology = readTopology(snap.Devices, handles)
	return snap, pciErr
}

// readDriver reads the versions; each is left empty when NVML does not say.
func (g *GPUs) readDriver() Driver {
	d := Driver{Loaded: true}
	if v, ret := call1(g.lib.SystemGetDriverVersion); ret == gonvml.SUCCESS {
		d.Version = v
	}
	if v, ret := call1(g.lib.SystemGetNVMLVersion); ret == gonvml.SUCCESS {
		d.NVMLVersion = v
	}
	if v, ret := call1(g.lib.SystemGetCudaDriverVersion); ret == gonvml.SUCCESS && v > 0 {
		d.CUDAVersion = cudaVersion(v)
	}
	return d
}

// cudaVersion spells NVML's integer CUDA version (1000*major + 10*minor,
// 12040) as "12.4".
func cudaVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// unreadableDevice is the entry for a GPU NVML cannot even hand out.
func unreadableDevice(index int, what string, ret gonvml.Return) Device {
	return Device{
		Index:     index,
		Processes: []Process{},
		Lost:      ret == gonvml.ERROR_GPU_IS_LOST,
		Error:     fmt.Sprintf("%s: %v", what, ret),
	}
}

package nvml

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// This file owns what runs on a GPU in a Sample: its compute processes and,
// when MIG is on, its MIG devices with their memory and processes.

func (f *sampleFields) readProcesses() {
	if infos, ok := f.processes(); ok {
		f.rawProcesses = infos
		f.out.Processes = f.names.processes(infos)
	}
}

// readMIG lists the MIG devices as Snapshot does. Through MIG device
// handles each comes with its memory in use and its processes (nvml.h: the
// per-instance process list needs the MIG device handle); where NVML offers
// no handles, the devices are found by walking the instances, without
// memory in use, and the GPU's own process list is divided among them by
// GPU and compute instance id.
func (f *sampleFields) readMIG() {
	if !f.state.migEnabled {
		return
	}
	var totalBytes uint64
	if f.out.MemoryTotalMiB != nil {
		totalBytes = *f.out.MemoryTotalMiB * mib
	}
	for _, h := range f.migDevices(totalBytes) {
		m := MIGSample{MIGDevice: h.MIGDevice, Processes: []Process{}}
		if h.dev == nil {
			var infos []gonvml.ProcessInfo
			for _, p := range f.rawProcesses {
				if int(p.GpuInstanceId) == h.GPUInstanceID && int(p.ComputeInstanceId) == h.ComputeInstanceID {
					infos = append(infos, p)
				}
			}
			m.Processes = f.names.processes(infos)
			f.out.MIG = append(f.out.MIG, m)
			continue
		}
		if h.memory != nil {
			used := h.memory.Used / mib
			m.MemoryUsedMiB = &used
		}
		if infos, ret := call(f.gpuReader, "MIG device processes", h.dev.GetComputeRunningProcesses); ret == gonvml.SUCCESS {
			m.Processes = f.names.processes(infos)
		}
		if f.stopped {
			return
		}
		f.out.MIG = append(f.out.MIG, m)
	}
}

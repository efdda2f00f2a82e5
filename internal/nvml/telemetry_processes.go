package nvml

import (
	"sort"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns what runs on a GPU in a Sample: its compute processes and,
// when MIG is on, its MIG devices with their memory and processes.

func (r *telemetryReader) readProcesses() {
	infos, ret := ask(r, "processes", r.dev.GetComputeRunningProcesses)
	if ret != gonvml.SUCCESS {
		return
	}
	r.processes = infos
	r.out.Processes = r.names.processes(infos)
}

// readMIG lists the MIG devices as Snapshot does. Through MIG device
// handles each comes with its memory in use and its processes (nvml.h: the
// per-instance process list needs the MIG device handle); where NVML offers
// no handles, the devices are found by walking the instances, without
// memory in use, and the GPU's own process list is divided among them by
// GPU and compute instance id.
func (r *telemetryReader) readMIG() {
	if !r.state.migEnabled {
		return
	}
	var totalBytes uint64
	if r.out.MemoryTotalMiB != nil {
		totalBytes = *r.out.MemoryTotalMiB * mib
	}
	handles, ok := migHandles(r.dev, totalBytes)
	if ok {
		for _, h := range handles {
			m := MIGSample{MIGDevice: h.MIGDevice, Processes: []Process{}}
			if h.memory != nil {
				used := h.memory.Used / mib
				m.MemoryUsedMiB = &used
			}
			infos, ret := call1(h.dev.GetComputeRunningProcesses)
			if deviceFatal(ret) {
				r.stop("MIG device processes", ret)
				return
			}
			if ret == gonvml.SUCCESS {
				m.Processes = r.names.processes(infos)
			}
			r.out.MIG = append(r.out.MIG, m)
		}
	} else {
		for _, d := range migDevicesByInstance(r.dev, totalBytes) {
			var infos []gonvml.ProcessInfo
			for _, p := range r.processes {
				if int(p.GpuInstanceId) == d.GPUInstanceID && int(p.ComputeInstanceId) == d.ComputeInstanceID {
					infos = append(infos, p)
				}
			}
			r.out.MIG = append(r.out.MIG, MIGSample{MIGDevice: d, Processes: r.names.processes(infos)})
		}
	}
	sort.Slice(r.out.MIG, func(i, j int) bool { return migLess(r.out.MIG[i].MIGDevice, r.out.MIG[j].MIGDevice) })
}

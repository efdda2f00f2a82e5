package nvml

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// This file owns turning NVML's process lists into Processes, for Snapshot
// and Sample alike.

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE: NVML reports it as a
// process's memory when it cannot say (e.g. under MIG without privilege).
const valueNotAvailable = ^uint64(0)

// processNames looks process names up once per Sample or Snapshot: a
// process on eight GPUs costs one nvmlSystemGetProcessName.
type processNames struct {
	lib   gonvml.Interface
	names map[uint32]string
}

func (p *processNames) name(pid uint32) string {
	if name, ok := p.names[pid]; ok {
		return name
	}
	name, ret := call1(func() (string, gonvml.Return) { return p.lib.SystemGetProcessName(int(pid)) })
	if ret != gonvml.SUCCESS {
		name = ""
	}
	if p.names == nil {
		p.names = map[uint32]string{}
	}
	p.names[pid] = name
	return name
}

// processes turns NVML's process list into Processes, named, with memory
// in MiB (0 where NVML says NVML_VALUE_NOT_AVAILABLE).
func (p *processNames) processes(infos []gonvml.ProcessInfo) []Process {
	out := make([]Process, 0, len(infos))
	for _, info := range infos {
		proc := Process{PID: info.Pid, Name: p.name(info.Pid)}
		if info.UsedGpuMemory != valueNotAvailable {
			proc.UsedMemoryMiB = info.UsedGpuMemory / mib
		}
		out = append(out, proc)
	}
	return out
}

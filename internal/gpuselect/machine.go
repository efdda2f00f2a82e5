package gpuselect

import (
	"sort"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// GPU is what selection needs to know of one GPU.
type GPU struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	TotalMiB uint64 `json:"memory_total_mib"`
	FreeMiB  uint64 `json:"memory_free_mib"`
	// UtilizationPercent is the GPU's utilization over the sample window;
	// nil when NVML does not report it.
	UtilizationPercent *uint32 `json:"utilization_percent,omitempty"`
	Processes          int     `json:"processes"`
	MIG                bool    `json:"mig,omitempty"`
	// Unusable says why the GPU cannot be handed out at all (lost, not
	// readable); "" when it can.
	Unusable string `json:"unusable,omitempty"`
}

// lostGPU is why a GPU NVML reports lost cannot be chosen.
const lostGPU = "fallen off the bus (NVML: GPU is lost); reset it or reboot"

// Machine is the GPUs of one machine and how they reach each other.
type Machine struct {
	GPUs  []GPU
	Links []nvml.Link
}

// MachineFromSnapshot builds a Machine from an inventory snapshot and,
// when given, a telemetry sample whose utilization (averaged over its
// window) and memory are newer than the snapshot's.
func MachineFromSnapshot(snap nvml.Snapshot, sample *nvml.TelemetrySample) Machine {
	latest := map[int]nvml.GPUSample{}
	if sample != nil {
		for _, s := range sample.GPUs {
			latest[s.Index] = s
		}
	}
	m := Machine{Links: snap.Topology}
	for _, d := range snap.Devices {
		g := GPU{
			Index: d.Index, UUID: d.UUID, Name: d.Name,
			TotalMiB: d.Memory.TotalMiB, FreeMiB: d.Memory.FreeMiB,
			UtilizationPercent: d.UtilizationGPU,
			Processes:          len(d.Processes),
			MIG:                d.MIG.Current,
		}
		if s, ok := latest[d.Index]; ok && s.UUID == d.UUID {
			if s.UtilizationGPU != nil {
				g.UtilizationPercent = s.UtilizationGPU
			}
			if s.MemoryFreeMiB != nil {
				g.FreeMiB = *s.MemoryFreeMiB
			}
			if s.MemoryTotalMiB != nil {
				g.TotalMiB = *s.MemoryTotalMiB
			}
			if s.Error == "" {
				g.Processes = len(s.Processes)
			}
			if s.Lost {
				g.Unusable = lostGPU
			}
		}
		switch {
		case d.Lost:
			g.Unusable = lostGPU
		case d.Error != "" || d.UUID == "":
			g.Unusable = "cannot be read: " + d.Error
		}
		m.GPUs = append(m.GPUs, g)
	}
	sort.Slice(m.GPUs, func(i, j int) bool { return m.GPUs[i].Index < m.GPUs[j].Index })
	return m
}

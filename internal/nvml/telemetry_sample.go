package nvml

import (
	"fmt"
	"sort"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns Sample: one pass over the GPUs for the monitoring commands.
// Its field set, what it reads of each GPU, is in telemetry_read.go (gauges),
// telemetry_utilization.go, telemetry_counters.go and telemetry_processes.go;
// the rules of reading a GPU in gpu_reader.go, and what is remembered from
// one call to the next (driver versions, device handles, per-GPU state) in
// gpu_state.go.

var _ Telemetry = (*GPUs)(nil)

// Sample reads the GPUs once (see Telemetry). Readings a GPU does not give
// are nil; a GPU NVML reports lost (or needing a reset) is listed with
// Lost/Error and what was read before, while the others are read normally.
// GPUs come in index order; opts.Indices may name each at most once, and an
// index NVML does not have is an error.
func (g *GPUs) Sample(opts SampleOptions) (TelemetrySample, error) {
	g.mu.Lock()
	defer g.mu.Unlock()

	sample := TelemetrySample{Time: g.now(), GPUs: []GPUSample{}}
	if !g.ensureInit() {
		sample.Driver = Driver{Loaded: false, Reason: g.reason}
		return sample, nil
	}
	state := &g.state
	if state.driver == nil {
		d := g.readDriver()
		state.driver = &d
	}
	sample.Driver = *state.driver

	count, ret := call1(g.lib.DeviceGetCount)
	if ret != gonvml.SUCCESS {
		return sample, fmt.Errorf("counting GPUs through NVML: %w", explain(ret))
	}
	indices, err := sampleIndices(opts.Indices, count)
	if err != nil {
		return sample, err
	}
	names := processNames{lib: g.lib}
	for _, i := range indices {
		sample.GPUs = append(sample.GPUs, g.sampleGPU(i, &names))
	}
	return sample, nil
}

// sampleIndices is the sorted list of GPUs to read.
func sampleIndices(wanted []int, count int) ([]int, error) {
	if len(wanted) == 0 {
		all := make([]int, count)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, i := range wanted {
		if i < 0 || i >= count {
			return nil, fmt.Errorf("no GPU with index %d on this machine: NVML counts %d (indices 0-%d)", i, count, count-1)
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out, nil
}

// sampleGPU reads GPU i. g.mu must be held.
func (g *GPUs) sampleGPU(i int, names *processNames) GPUSample {
	out := GPUSample{Index: i, Processes: []Process{}}
	state := &g.state
	dev, ok := state.handles[i]
	if !ok {
		var ret gonvml.Return
		dev, ret = call1(func() (gonvml.Device, gonvml.Return) { return g.lib.DeviceGetHandleByIndex(i) })
		if ret != gonvml.SUCCESS {
			g.nameLostGPU(&out)
			out.Lost = ret == gonvml.ERROR_GPU_IS_LOST
			out.Error = fmt.Sprintf("getting the device handle: %v", ret)
			return out
		}
		if state.handles == nil {
			state.handles = map[int]gonvml.Device{}
		}
		state.handles[i] = dev
	}
	readSample(dev, state, names, &out)
	if out.Error != "" && out.UUID == "" {
		g.nameLostGPU(&out)
	}
	return out
}

// nameLostGPU fills the identity of a GPU that could not be read from the
// last pass that could.
func (g *GPUs) nameLostGPU(out *GPUSample) {
	if st := g.state.byIndex[out.Index]; st != nil {
		out.UUID, out.Name, out.PCIBusID = st.uuid, st.name, st.busID
	}
}

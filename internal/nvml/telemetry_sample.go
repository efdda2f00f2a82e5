package nvml

import (
	"fmt"
	"sort"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns Sample: one pass over the GPUs for the monitoring commands,
// and what that pass remembers from one call to the next. The readings
// themselves live in telemetry_read.go (gauges), telemetry_utilization.go,
// telemetry_counters.go and telemetry_processes.go.
//
// What is remembered, for as long as NVML stays initialized (Close forgets
// it):
//   - the driver versions and the device handles, which NVML does not change
//     while it is initialized;
//   - per GPU (by UUID): its name and bus id, the timestamp of the newest
//     utilization sample already averaged, how many NVLinks it has, and the
//     readings it answered ERROR_NOT_SUPPORTED or ERROR_FUNCTION_NOT_FOUND
//     to, which are not asked again (a GPU does not gain a feature while
//     the driver is loaded). A change of MIG mode forgets that last list,
//     since MIG mode changes what NVML supports (utilization, remapped rows).

var _ Telemetry = (*GPUs)(nil)

// telemetryState is what Sample keeps between calls.
type telemetryState struct {
	driver  *Driver
	handles map[int]gonvml.Device
	byUUID  map[string]*gpuTelemetry
	byIndex map[int]*gpuTelemetry // the GPU last seen at each index, to name a GPU that is lost
}

// gpuTelemetry is what Sample keeps about one GPU.
type gpuTelemetry struct {
	uuid, name, busID string

	// lastSeen is the newest timestamp (µs) of the samples already taken
	// from each NVML sample buffer; 0 before the first Sample.
	lastSeen map[gonvml.SamplingType]uint64

	// unsupported are the readings the GPU answered ERROR_NOT_SUPPORTED or
	// ERROR_FUNCTION_NOT_FOUND to, with that answer.
	unsupported map[string]gonvml.Return
	migKnown    bool
	migEnabled  bool

	// nvLinks is how many link indices NVML accepts; -1 until counted.
	nvLinks int
}

func (s *telemetryState) gpu(uuid string) *gpuTelemetry {
	if s.byUUID == nil {
		s.byUUID = map[string]*gpuTelemetry{}
	}
	st := s.byUUID[uuid]
	if st == nil {
		st = &gpuTelemetry{
			uuid:        uuid,
			lastSeen:    map[gonvml.SamplingType]uint64{},
			unsupported: map[string]gonvml.Return{},
			nvLinks:     -1,
		}
		s.byUUID[uuid] = st
	}
	return st
}

// noteMIGMode records the GPU's MIG mode and forgets what it did not
// support when the mode changed.
func (st *gpuTelemetry) noteMIGMode(enabled bool) {
	if st.migKnown && st.migEnabled != enabled {
		st.unsupported = map[string]gonvml.Return{}
		st.nvLinks = -1
	}
	st.migKnown, st.migEnabled = true, enabled
}

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
	state := &g.telemetry
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
	state := &g.telemetry
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

	uuid, ret := call1(dev.GetUUID)
	if ret != gonvml.SUCCESS {
		g.nameLostGPU(&out)
		out.Lost = ret == gonvml.ERROR_GPU_IS_LOST
		out.Error = fmt.Sprintf("reading UUID: %v", ret)
		return out
	}
	st := state.gpu(uuid)
	if state.byIndex == nil {
		state.byIndex = map[int]*gpuTelemetry{}
	}
	state.byIndex[i] = st

	r := &telemetryReader{lib: g.lib, dev: dev, state: st, out: &out, names: names}
	r.readIdentity()
	steps := []func(){
		r.readMIGMode,
		r.readUtilization,
		r.readMemory,
		r.readTemperatures,
		r.readPower,
		r.readClocks,
		r.readThrottleReasons,
		r.readPCIe,
		r.readECC,
		r.readRetirement,
		r.readViolations,
		r.readNVLinkErrors,
		r.readProcesses,
		r.readMIG,
	}
	for _, step := range steps {
		if r.stopped {
			break
		}
		step()
	}
	return out
}

// nameLostGPU fills the identity of a GPU that could not be read from the
// last sample that could.
func (g *GPUs) nameLostGPU(out *GPUSample) {
	if st := g.telemetry.byIndex[out.Index]; st != nil {
		out.UUID, out.Name, out.PCIBusID = st.uuid, st.name, st.busID
	}
}

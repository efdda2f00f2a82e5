package nvml

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// This file owns what Snapshot and Sample remember between calls, for as
// long as NVML stays initialized (Close forgets it):
//   - the driver versions and the device handles Sample uses, which NVML
//     does not change while it is initialized;
//   - per GPU (by UUID): its name and bus id, the timestamp of the newest
//     utilization sample already averaged, how many NVLinks it has, and the
//     readings it answered ERROR_NOT_SUPPORTED or ERROR_FUNCTION_NOT_FOUND
//     to, which are not asked again (a GPU does not gain a feature while
//     the driver is loaded). A change of MIG mode forgets that last list,
//     since MIG mode changes what NVML supports (utilization, remapped rows).

// readState is what the GPUs' readers keep between calls.
type readState struct {
	driver  *Driver
	handles map[int]gonvml.Device
	byUUID  map[string]*gpuState
	byIndex map[int]*gpuState // the GPU last seen at each index, to name a GPU that is lost
}

// gpuState is what is kept about one GPU.
type gpuState struct {
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

// gpu is what is kept about the GPU with this UUID, now at index.
func (s *readState) gpu(index int, uuid string) *gpuState {
	if s.byUUID == nil {
		s.byUUID, s.byIndex = map[string]*gpuState{}, map[int]*gpuState{}
	}
	st := s.byUUID[uuid]
	if st == nil {
		st = &gpuState{
			uuid:        uuid,
			lastSeen:    map[gonvml.SamplingType]uint64{},
			unsupported: map[string]gonvml.Return{},
			nvLinks:     -1,
		}
		s.byUUID[uuid] = st
	}
	s.byIndex[index] = st
	return st
}

// noteMIGMode records the GPU's MIG mode and forgets what it did not
// support when the mode changed.
func (st *gpuState) noteMIGMode(enabled bool) {
	if st.migKnown && st.migEnabled != enabled {
		st.unsupported = map[string]gonvml.Return{}
		st.nvLinks = -1
	}
	st.migKnown, st.migEnabled = true, enabled
}

package healthagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// This file owns what the agent keeps on the node so that a restart of its
// pod forgets nothing: the held faults (an XID it saw cannot be read back
// from NVML), the since-driver-load counters of their GPUs at the time, so
// that a reset while the agent was away is still seen (they went
// backwards), whether it set the taint, and the node's boot ID
// (status.nodeInfo.bootID). A state saved under another boot ID is
// dropped: a reboot resets every GPU.

// AnnotationState is the node annotation holding the agent's state
// (savedState as JSON). It is the agent's alone.
const AnnotationState = "gpu.gpuinfra.io/health-agent-state"

// savedState is the agent's state on the node.
type savedState struct {
	BootID string       `json:"boot_id"`
	Faults []savedFault `json:"faults,omitempty"`
	// Counters are the since-driver-load counters of the GPUs of Faults,
	// by GPU index, when the faults were saved.
	Counters map[int]sinceLoadCounters `json:"counters,omitempty"`
	// Tainted: the agent set the taint gpuhealth.TaintKey.
	Tainted bool `json:"tainted,omitempty"`
}

// savedFault is a gpuhealth.Fault in JSON.
type savedFault struct {
	Class  gpuhealth.FaultClass `json:"class"`
	GPU    *gpuhealth.GPURef    `json:"gpu,omitempty"`
	XID    uint64               `json:"xid,omitempty"`
	Count  uint64               `json:"count,omitempty"`
	Since  time.Time            `json:"since"`
	Detail string               `json:"detail,omitempty"`
}

func (s savedState) encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("encoding the health agent's state: %v", err)) // plain structs: cannot fail
	}
	return string(b)
}

// decodeState reads the annotation; "" is no state.
func decodeState(s string) (savedState, error) {
	var out savedState
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return savedState{}, fmt.Errorf("reading node annotation %s: %w", AnnotationState, err)
	}
	return out, nil
}

// sameFaults says whether two states hold the same faults (by key, not by
// count or time): a state is saved again only when they change.
func (s savedState) sameFaults(o savedState) bool {
	keys := func(st savedState) []string {
		var k []string
		for _, f := range st.Faults {
			k = append(k, f.fault().Key())
		}
		slices.Sort(k)
		return k
	}
	return s.BootID == o.BootID && s.Tainted == o.Tainted && slices.Equal(keys(s), keys(o))
}

func (f savedFault) fault() gpuhealth.Fault {
	return gpuhealth.Fault{Class: f.Class, GPU: f.GPU, XID: f.XID, Count: f.Count, Since: f.Since, Detail: f.Detail}
}

// save is the tracker's part of the state: its held faults and their
// GPUs' counters.
func (t *tracker) save() savedState {
	var s savedState
	for _, f := range t.held {
		s.Faults = append(s.Faults, savedFault{Class: f.Class, GPU: f.GPU, XID: f.XID, Count: f.Count, Since: f.Since, Detail: f.Detail})
		if f.GPU == nil {
			continue
		}
		if g := t.gpus[f.GPU.Index]; g != nil {
			if s.Counters == nil {
				s.Counters = map[int]sinceLoadCounters{}
			}
			s.Counters[f.GPU.Index] = g.sinceLoad
		}
	}
	slices.SortFunc(s.Faults, func(a, b savedFault) int {
		if c := gpuIndex(a.fault()) - gpuIndex(b.fault()); c != 0 {
			return c
		}
		if c := classRank(a.Class) - classRank(b.Class); c != 0 {
			return c
		}
		return int(a.XID) - int(b.XID)
	})
	return s
}

// restore takes back the held faults of a saved state of this boot. A
// fault of a GPU whose counters went backwards since it was saved is not
// taken back: the GPU was reset while the agent was away.
func (t *tracker) restore(s savedState) {
	for _, sf := range s.Faults {
		f := sf.fault()
		if f.GPU != nil {
			g := t.gpu(f.GPU.Index)
			saved := s.Counters[f.GPU.Index]
			if g.sinceLoad.EnergyMJ != nil || g.sinceLoad.ECCUncorrected != nil || g.sinceLoad.ECCCorrected != nil {
				if saved.wentBackwards(g.sinceLoad) {
					continue
				}
			} else {
				g.sinceLoad = saved
			}
		}
		if _, ok := t.held[f.Key()]; !ok {
			t.held[f.Key()] = &f
		}
	}
}

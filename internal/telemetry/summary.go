package telemetry

import (
	"maps"
	"slices"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// Summary is what a monitoring run saw, per GPU, with findings in plain
// language.
type Summary struct {
	Samples int          `json:"samples"`
	Start   time.Time    `json:"start"`
	End     time.Time    `json:"end"`
	GPUs    []GPUSummary `json:"gpus"`
	// Events are the XID, ECC, unavailable and lost events in the order
	// they came; throttle transitions are summarized per GPU as time
	// shares and only counted here.
	Events      []nvml.Event           `json:"events"`
	EventCounts map[nvml.EventKind]int `json:"event_counts"`
	Findings    []string               `json:"findings"`
}

// GPUSummary is one GPU over the run. A Stat is nil when the GPU never
// gave that reading.
type GPUSummary struct {
	Index   int    `json:"index"`
	UUID    string `json:"uuid"`
	Name    string `json:"name"`
	Samples int    `json:"samples"`

	UtilizationGPU    *Stat   `json:"utilization_gpu_percent,omitempty"`
	UtilizationMemory *Stat   `json:"utilization_memory_percent,omitempty"`
	MemoryUsedMiB     *Stat   `json:"memory_used_mib,omitempty"`
	MemoryTotalMiB    *uint64 `json:"memory_total_mib,omitempty"`
	TemperatureC      *Stat   `json:"temperature_c,omitempty"`
	PowerDrawW        *Stat   `json:"power_draw_w,omitempty"`
	SMClockMHz        *Stat   `json:"clocks_sm_mhz,omitempty"`

	// Throttle lists the slowdown reasons seen, with the share of samples
	// (with a reasons reading) each was active in.
	Throttle []ThrottleShare `json:"throttle"`
	// PeakMemory is the sample with the most memory used and the process
	// that held the most then.
	PeakMemory *PeakMemory `json:"peak_memory,omitempty"`
	// ProcessMemoryMaxMiB is the most memory the GPU's processes (its MIG
	// devices' included) held together at one sample.
	ProcessMemoryMaxMiB uint64 `json:"process_memory_max_mib"`
	// MIG is true when MIG devices were seen: NVML gives no utilization
	// per MIG device, only the whole GPU's.
	MIG bool `json:"mig,omitempty"`

	LostAt *time.Time `json:"lost_at,omitempty"`
	// NewUncorrectableECC is how much the volatile uncorrectable ECC
	// count rose between the first and the last sample.
	NewUncorrectableECC uint64 `json:"new_uncorrectable_ecc"`
	// XIDs counts the XID events per XID number.
	XIDs map[uint64]int `json:"xids,omitempty"`
}

// Stat is a reading's minimum, mean and maximum over the run.
type Stat struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// ThrottleShare is the share of samples a slowdown reason was active in.
type ThrottleShare struct {
	Reason  string  `json:"reason"` // nvidia-smi's name, "sw_power_cap"
	Meaning string  `json:"meaning"`
	Samples int     `json:"samples"`
	Percent float64 `json:"percent"`
}

// PeakMemory is the moment a GPU used the most memory.
type PeakMemory struct {
	UsedMiB  uint64        `json:"used_mib"`
	TotalMiB *uint64       `json:"total_mib,omitempty"`
	Time     time.Time     `json:"time"`
	Process  *nvml.Process `json:"process,omitempty"` // the one holding the most then; nil when none was listed
}

// Summary returns what the run saw so far, GPUs in index order.
func (r *Recorder) Summary() Summary {
	s := Summary{
		Samples:     r.samples,
		Start:       r.start,
		End:         r.end,
		Events:      slices.Clone(r.events),
		EventCounts: maps.Clone(r.eventCounts),
	}
	if s.Events == nil {
		s.Events = []nvml.Event{}
	}
	for _, index := range slices.Sorted(maps.Keys(r.gpus)) {
		s.GPUs = append(s.GPUs, r.gpus[index].summary())
	}
	s.Findings = findings(s)
	return s
}

func (rec *gpuRecord) summary() GPUSummary {
	g := GPUSummary{
		Index: rec.index, UUID: rec.uuid, Name: rec.name, Samples: rec.samples,
		UtilizationGPU:      rec.util.stat(),
		UtilizationMemory:   rec.memUtil.stat(),
		MemoryUsedMiB:       rec.memUsed.stat(),
		MemoryTotalMiB:      rec.memTotal,
		TemperatureC:        rec.temp.stat(),
		PowerDrawW:          rec.power.stat(),
		SMClockMHz:          rec.smClock.stat(),
		Throttle:            []ThrottleShare{},
		PeakMemory:          rec.peak,
		ProcessMemoryMaxMiB: rec.heldMaxMiB,
		MIG:                 rec.mig,
		LostAt:              rec.lostAt,
		XIDs:                maps.Clone(rec.xids),
	}
	for _, reason := range nvml.ThrottleReasons {
		if n := rec.reasonSamples[reason.Bit]; n > 0 {
			g.Throttle = append(g.Throttle, ThrottleShare{
				Reason: reason.Name, Meaning: reason.Meaning, Samples: n, Percent: percent(n, rec.reasonReadings),
			})
		}
	}
	if rec.eccFirst != nil && *rec.eccLast > *rec.eccFirst {
		g.NewUncorrectableECC = *rec.eccLast - *rec.eccFirst
	}
	return g
}

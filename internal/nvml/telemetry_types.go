package nvml

import (
	"context"
	"time"
)

// This file holds the types of GPU telemetry: what one NVML pass over the
// GPUs reads for `gpu-bootstrap monitor`, `metrics` and `select`, and the
// events NVML reports as they happen. Snapshot (types.go) is for inventory
// and health; a TelemetrySample is for watching a GPU work over time, so it
// carries the counters a rate or a time share is computed from.
//
// Every reading a GPU does not offer (not supported, no permission, a MIG
// instance) is nil, never zero: a consumer says "n/a" rather than printing a
// number NVML never gave.

// Telemetry is what the monitoring commands ask of the GPUs. *GPUs
// implements it over go-nvml.
type Telemetry interface {
	// Sample reads the GPUs once (all of them when opts.Indices is empty).
	// A missing driver is reported in TelemetrySample.Driver with no error
	// and no GPUs. Calls are serialized: two Samples never run NVML at once.
	Sample(opts SampleOptions) (TelemetrySample, error)
	// WatchEvents reports NVML's events (XID errors, ECC errors, a GPU
	// becoming unavailable) on the channel until ctx ends, then closes it.
	// It fails when there is no driver or NVML offers no event set.
	WatchEvents(ctx context.Context) (<-chan Event, error)
	Close() error
}

// SampleOptions choose what Sample reads.
type SampleOptions struct {
	// Indices are the NVML indices of the GPUs to read; empty reads all.
	Indices []int
}

// TelemetrySample is one pass over the GPUs.
type TelemetrySample struct {
	Time   time.Time   `json:"time"`
	Driver Driver      `json:"driver"`
	GPUs   []GPUSample `json:"gpus"`
}

// GPUSample is one GPU's readings at one moment. Counters (energy, ECC,
// violation times, PCIe replays, NVLink errors) are totals as NVML keeps
// them; consumers take differences between samples.
type GPUSample struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	PCIBusID string `json:"pci_bus_id"` // sysfs spelling, "0000:07:00.0"

	// Utilization in percent. Where the GPU keeps NVML's sample buffers the
	// value is the mean of the buffer's samples since the previous Sample of
	// this GPU (UtilizationAveraged true), so a 1 s interval reflects the
	// whole second; otherwise it is nvmlDeviceGetUtilizationRates' reading.
	// The mean is rounded to the nearest percent, halves up; a GPU's first
	// Sample averages the last second of the buffer. UtilizationAveraged
	// speaks for UtilizationGPU; UtilizationMemory is averaged the same way
	// whenever its own buffer has new samples (telemetry_utilization.go).
	UtilizationGPU      *uint32 `json:"utilization_gpu_percent,omitempty"`
	UtilizationMemory   *uint32 `json:"utilization_memory_percent,omitempty"`
	UtilizationAveraged bool    `json:"utilization_averaged,omitempty"`
	UtilizationEncoder  *uint32 `json:"utilization_encoder_percent,omitempty"`
	UtilizationDecoder  *uint32 `json:"utilization_decoder_percent,omitempty"`

	// MemoryUsedMiB leaves out the driver's reserve, MemoryReservedMiB,
	// where the driver has nvmlDeviceGetMemoryInfo_v2; without it the
	// reserve is nil and counted in MemoryUsedMiB (gpu_readings.go).
	MemoryTotalMiB    *uint64 `json:"memory_total_mib,omitempty"`
	MemoryUsedMiB     *uint64 `json:"memory_used_mib,omitempty"`
	MemoryFreeMiB     *uint64 `json:"memory_free_mib,omitempty"`
	MemoryReservedMiB *uint64 `json:"memory_reserved_mib,omitempty"`

	TemperatureC       *uint32 `json:"temperature_c,omitempty"`
	MemoryTemperatureC *uint32 `json:"memory_temperature_c,omitempty"`

	PowerDrawW        *float64 `json:"power_draw_w,omitempty"`
	PowerLimitW       *float64 `json:"power_limit_w,omitempty"`
	EnergyMilliJoules *uint64  `json:"energy_mj,omitempty"` // since the driver was loaded

	GraphicsClockMHz *uint32 `json:"clocks_graphics_mhz,omitempty"`
	SMClockMHz       *uint32 `json:"clocks_sm_mhz,omitempty"`
	MemoryClockMHz   *uint32 `json:"clocks_memory_mhz,omitempty"`

	// ThrottleReasons is NVML's clocks event (throttle) reasons bit mask
	// (nvmlClocksEventReason*); ThrottleReasonNames spells it.
	ThrottleReasons *uint64 `json:"throttle_reasons,omitempty"`

	PCIeTxKBps  *uint32 `json:"pcie_tx_kbps,omitempty"` // KB/s, NVML's 20 ms window
	PCIeRxKBps  *uint32 `json:"pcie_rx_kbps,omitempty"`
	PCIeReplays *uint64 `json:"pcie_replays,omitempty"`

	ECC          ECCCounters      `json:"ecc"`
	Violations   ViolationTimes   `json:"violations"`
	NVLinkErrors *NVLinkErrorSums `json:"nvlink_errors,omitempty"`

	Processes []Process `json:"processes"`
	// MIG lists the MIG devices when MIG mode is on. NVML gives no
	// per-instance utilization, temperature or power: those stay on the GPU.
	MIG []MIGSample `json:"mig,omitempty"`

	// Lost is true when NVML answered ERROR_GPU_IS_LOST: the GPU fell off
	// the bus. Error says which reading failed; readings before it are kept.
	Lost  bool   `json:"lost,omitempty"`
	Error string `json:"error,omitempty"`
}

// ECCCounters are a GPU's ECC error counts and memory-retirement state.
type ECCCounters struct {
	CorrectedVolatile     *uint64 `json:"corrected_volatile,omitempty"` // single-bit, since driver load
	UncorrectedVolatile   *uint64 `json:"uncorrected_volatile,omitempty"`
	CorrectedAggregate    *uint64 `json:"corrected_aggregate,omitempty"` // over the GPU's lifetime
	UncorrectedAggregate  *uint64 `json:"uncorrected_aggregate,omitempty"`
	RetiredSingleBit      *uint64 `json:"retired_pages_sbe,omitempty"` // pre-Ampere page retirement
	RetiredDoubleBit      *uint64 `json:"retired_pages_dbe,omitempty"`
	RetiredPending        *bool   `json:"retired_pages_pending,omitempty"`
	RemappedCorrectable   *uint64 `json:"remapped_rows_correctable,omitempty"` // Ampere and later row remapping
	RemappedUncorrectable *uint64 `json:"remapped_rows_uncorrectable,omitempty"`
	RemapPending          *bool   `json:"remapped_rows_pending,omitempty"`
	RemapFailure          *bool   `json:"remapped_rows_failure,omitempty"`
}

// ViolationTimes are nvmlDeviceGetViolationStatus' totals, in nanoseconds,
// of time the GPU's clocks were held down by each policy.
type ViolationTimes struct {
	PowerNs       *uint64 `json:"power_ns,omitempty"`
	ThermalNs     *uint64 `json:"thermal_ns,omitempty"`
	SyncBoostNs   *uint64 `json:"sync_boost_ns,omitempty"`
	BoardLimitNs  *uint64 `json:"board_limit_ns,omitempty"`
	LowUtilNs     *uint64 `json:"low_util_ns,omitempty"`
	ReliabilityNs *uint64 `json:"reliability_ns,omitempty"`
}

// NVLinkErrorSums are a GPU's NVLink error counters summed over its links.
type NVLinkErrorSums struct {
	CRCFlit  uint64 `json:"crc_flit"`
	CRCData  uint64 `json:"crc_data"`
	Replay   uint64 `json:"replay"`
	Recovery uint64 `json:"recovery"`
}

// MIGSample is one MIG device's memory and processes.
type MIGSample struct {
	MIGDevice
	MemoryUsedMiB *uint64   `json:"memory_used_mib,omitempty"`
	Processes     []Process `json:"processes"`
}

// EventKind names what an Event reports.
type EventKind string

// Event kinds. NVML reports XID and ECC events; the others are derived by
// the monitor from successive samples.
const (
	EventXID            EventKind = "xid"
	EventECCSingleBit   EventKind = "ecc_single_bit"
	EventECCDoubleBit   EventKind = "ecc_double_bit"
	EventGPUUnavailable EventKind = "gpu_unavailable"
	EventGPULost        EventKind = "gpu_lost"
	EventThrottleStart  EventKind = "throttle_start"
	EventThrottleStop   EventKind = "throttle_stop"
)

// Event is one thing that happened to a GPU.
type Event struct {
	Time     time.Time `json:"time"`
	Kind     EventKind `json:"kind"`
	GPUIndex int       `json:"gpu"`
	UUID     string    `json:"uuid,omitempty"`
	// XID is the XID number for EventXID; Data is NVML's event data for
	// the other kinds.
	XID  uint64 `json:"xid,omitempty"`
	Data uint64 `json:"data,omitempty"`
	// GPUInstanceID and ComputeInstanceID name a MIG instance when NVML
	// attributes the event to one; -1 when not.
	GPUInstanceID     int `json:"gpu_instance_id"`
	ComputeInstanceID int `json:"compute_instance_id"`
	// Detail is the event in words: an XID's usual meaning, the throttle
	// reasons that started or stopped.
	Detail string `json:"detail,omitempty"`
}

package dcgm

import "github.com/gpuinfra/terraform-provider-gpu/internal/nvml"

// metricType is a Prometheus metric type as dcgm-exporter's counters file
// spells it.
type metricType string

const (
	gauge   metricType = "gauge"
	counter metricType = "counter"
)

// field is one DCGM field this package fills from a GPU sample: its
// dcgm-exporter name, type and help, and how to read it. value returns
// false when NVML gave no reading.
type field struct {
	name  string
	typ   metricType
	help  string
	value func(g *nvml.GPUSample) (number, bool)
}

// number is a sample value: an integer, or a float where DCGM gives one.
type number struct {
	u       uint64
	f       float64
	isFloat bool
}

func u32(v *uint32) (number, bool) {
	if v == nil {
		return number{}, false
	}
	return number{u: uint64(*v)}, true
}

func u64(v *uint64) (number, bool) {
	if v == nil {
		return number{}, false
	}
	return number{u: *v}, true
}

func f64(v *float64) (number, bool) {
	if v == nil {
		return number{}, false
	}
	return number{f: *v, isFloat: true}, true
}

func boolean(v *bool) (number, bool) {
	if v == nil {
		return number{}, false
	}
	if *v {
		return number{u: 1}, true
	}
	return number{u: 0}, true
}

func nvlink(g *nvml.GPUSample, pick func(nvml.NVLinkErrorSums) uint64) (number, bool) {
	if g.NVLinkErrors == nil {
		return number{}, false
	}
	return number{u: pick(*g.NVLinkErrors)}, true
}

// Names of the fields written outside the table: per MIG instance, and
// from events rather than samples.
const (
	fieldFBUsed    = "DCGM_FI_DEV_FB_USED"
	fieldXIDErrors = "DCGM_FI_DEV_XID_ERRORS"
)

// fields are the GPU fields in the order of dcgm-exporter's default counters
// file; DCGM_FI_DEV_XID_ERRORS comes from NVML's events (Exporter) and is
// written in its place.
var fields = []field{
	{"DCGM_FI_DEV_SM_CLOCK", gauge, "SM clock frequency (in MHz).", func(g *nvml.GPUSample) (number, bool) { return u32(g.SMClockMHz) }},
	{"DCGM_FI_DEV_MEM_CLOCK", gauge, "Memory clock frequency (in MHz).", func(g *nvml.GPUSample) (number, bool) { return u32(g.MemoryClockMHz) }},
	{"DCGM_FI_DEV_MEMORY_TEMP", gauge, "Memory temperature (in C).", func(g *nvml.GPUSample) (number, bool) { return u32(g.MemoryTemperatureC) }},
	{"DCGM_FI_DEV_GPU_TEMP", gauge, "GPU temperature (in C).", func(g *nvml.GPUSample) (number, bool) { return u32(g.TemperatureC) }},
	{"DCGM_FI_DEV_POWER_USAGE", gauge, "Power draw (in W).", func(g *nvml.GPUSample) (number, bool) { return f64(g.PowerDrawW) }},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", counter, "Total energy consumption since boot (in mJ).", func(g *nvml.GPUSample) (number, bool) { return u64(g.EnergyMilliJoules) }},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", counter, "Total number of PCIe retries.", func(g *nvml.GPUSample) (number, bool) { return u64(g.PCIeReplays) }},
	{"DCGM_FI_DEV_GPU_UTIL", gauge, "GPU utilization (in %).", func(g *nvml.GPUSample) (number, bool) { return u32(g.UtilizationGPU) }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", gauge, "Memory utilization (in %).", func(g *nvml.GPUSample) (number, bool) { return u32(g.UtilizationMemory) }},
	{"DCGM_FI_DEV_ENC_UTIL", gauge, "Encoder utilization (in %).", func(g *nvml.GPUSample) (number, bool) { return u32(g.UtilizationEncoder) }},
	{"DCGM_FI_DEV_DEC_UTIL", gauge, "Decoder utilization (in %).", func(g *nvml.GPUSample) (number, bool) { return u32(g.UtilizationDecoder) }},
	{fieldXIDErrors, gauge, "Value of the last XID error encountered.", nil},
	{"DCGM_FI_DEV_POWER_VIOLATION", counter, "Throttling duration due to power constraints (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.PowerNs) }},
	{"DCGM_FI_DEV_THERMAL_VIOLATION", counter, "Throttling duration due to thermal constraints (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.ThermalNs) }},
	{"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", counter, "Throttling duration due to sync-boost constraints (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.SyncBoostNs) }},
	{"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", counter, "Throttling duration due to board limit constraints (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.BoardLimitNs) }},
	{"DCGM_FI_DEV_LOW_UTIL_VIOLATION", counter, "Throttling duration due to low utilization (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.LowUtilNs) }},
	{"DCGM_FI_DEV_RELIABILITY_VIOLATION", counter, "Throttling duration due to reliability constraints (in ns).", func(g *nvml.GPUSample) (number, bool) { return u64(g.Violations.ReliabilityNs) }},
	{"DCGM_FI_DEV_FB_FREE", gauge, "Framebuffer memory free (in MiB).", func(g *nvml.GPUSample) (number, bool) { return u64(g.MemoryFreeMiB) }},
	{fieldFBUsed, gauge, "Framebuffer memory used (in MiB).", func(g *nvml.GPUSample) (number, bool) { return u64(g.MemoryUsedMiB) }},
	{"DCGM_FI_DEV_FB_RESERVED", gauge, "Framebuffer memory reserved (in MiB).", func(g *nvml.GPUSample) (number, bool) { return u64(g.MemoryReservedMiB) }},
	{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", counter, "Total number of single-bit volatile ECC errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.CorrectedVolatile) }},
	{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", counter, "Total number of double-bit volatile ECC errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.UncorrectedVolatile) }},
	{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", counter, "Total number of single-bit persistent ECC errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.CorrectedAggregate) }},
	{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", counter, "Total number of double-bit persistent ECC errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.UncorrectedAggregate) }},
	{"DCGM_FI_DEV_RETIRED_SBE", counter, "Total number of retired pages due to single-bit errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.RetiredSingleBit) }},
	{"DCGM_FI_DEV_RETIRED_DBE", counter, "Total number of retired pages due to double-bit errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.RetiredDoubleBit) }},
	{"DCGM_FI_DEV_RETIRED_PENDING", counter, "Whether pages are pending retirement (1) or not (0).", func(g *nvml.GPUSample) (number, bool) { return boolean(g.ECC.RetiredPending) }},
	{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", counter, "Total number of NVLink flow-control CRC errors.", func(g *nvml.GPUSample) (number, bool) {
		return nvlink(g, func(s nvml.NVLinkErrorSums) uint64 { return s.CRCFlit })
	}},
	{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", counter, "Total number of NVLink data CRC errors.", func(g *nvml.GPUSample) (number, bool) {
		return nvlink(g, func(s nvml.NVLinkErrorSums) uint64 { return s.CRCData })
	}},
	{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", counter, "Total number of NVLink retries.", func(g *nvml.GPUSample) (number, bool) {
		return nvlink(g, func(s nvml.NVLinkErrorSums) uint64 { return s.Replay })
	}},
	{"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", counter, "Total number of NVLink recovery errors.", func(g *nvml.GPUSample) (number, bool) {
		return nvlink(g, func(s nvml.NVLinkErrorSums) uint64 { return s.Recovery })
	}},
	{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", counter, "Number of remapped rows for uncorrectable errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.RemappedUncorrectable) }},
	{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", counter, "Number of remapped rows for correctable errors.", func(g *nvml.GPUSample) (number, bool) { return u64(g.ECC.RemappedCorrectable) }},
	{"DCGM_FI_DEV_ROW_REMAP_FAILURE", gauge, "Whether remapping of rows has failed.", func(g *nvml.GPUSample) (number, bool) { return boolean(g.ECC.RemapFailure) }},
}

// unfilled are the names in dcgm-exporter's default counters (those of
// 3.3.6-3.4.2 and of 4.5.3-4.8.2, testdata) this package cannot fill from
// NVML, with the reason; the package comment says more.
var unfilled = map[string]string{
	"DCGM_FI_DEV_PCIE_TX_THROUGHPUT":     "NVML gives a KB/s rate over 20 ms, not a total",
	"DCGM_FI_DEV_PCIE_RX_THROUGHPUT":     "NVML gives a KB/s rate over 20 ms, not a total",
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "NVLink traffic counters are not sampled",
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_L0":    "NVLink traffic counters are not sampled",
	"DCGM_FI_DEV_VGPU_LICENSE_STATUS":    "vGPU licensing is not sampled",
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE":      dcp,
	"DCGM_FI_PROF_SM_ACTIVE":             dcp,
	"DCGM_FI_PROF_SM_OCCUPANCY":          dcp,
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":    dcp,
	"DCGM_FI_PROF_DRAM_ACTIVE":           dcp,
	"DCGM_FI_PROF_PIPE_FP64_ACTIVE":      dcp,
	"DCGM_FI_PROF_PIPE_FP32_ACTIVE":      dcp,
	"DCGM_FI_PROF_PIPE_FP16_ACTIVE":      dcp,
	"DCGM_FI_PROF_PCIE_TX_BYTES":         dcp,
	"DCGM_FI_PROF_PCIE_RX_BYTES":         dcp,
}

// dcp is why the profiling fields are not filled.
const dcp = "a DCGM profiling (DCP) field: DCGM's profiling module reads hardware counters NVML does not expose"

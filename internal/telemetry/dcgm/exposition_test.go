package dcgm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

func ptr[T any](v T) *T { return &v }

// fullGPU is a GPU whose every reading NVML gave.
func fullGPU(index int) nvml.GPUSample {
	return nvml.GPUSample{
		Index:    index,
		UUID:     fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", index),
		Name:     "NVIDIA A100-SXM4-40GB",
		PCIBusID: "0000:07:00.0",

		UtilizationGPU: ptr[uint32](87), UtilizationMemory: ptr[uint32](41),
		UtilizationEncoder: ptr[uint32](0), UtilizationDecoder: ptr[uint32](3),
		MemoryTotalMiB: ptr[uint64](40960), MemoryUsedMiB: ptr[uint64](30000), MemoryFreeMiB: ptr[uint64](10536), MemoryReservedMiB: ptr[uint64](424),
		TemperatureC: ptr[uint32](64), MemoryTemperatureC: ptr[uint32](71),
		PowerDrawW: ptr(312.5), PowerLimitW: ptr(400.0), EnergyMilliJoules: ptr[uint64](123456789),
		GraphicsClockMHz: ptr[uint32](1410), SMClockMHz: ptr[uint32](1410), MemoryClockMHz: ptr[uint32](1215),
		PCIeTxKBps: ptr[uint32](5000), PCIeRxKBps: ptr[uint32](7000), PCIeReplays: ptr[uint64](2),
		ECC: nvml.ECCCounters{
			CorrectedVolatile: ptr[uint64](5), UncorrectedVolatile: ptr[uint64](0),
			CorrectedAggregate: ptr[uint64](17), UncorrectedAggregate: ptr[uint64](1),
			RetiredSingleBit: ptr[uint64](0), RetiredDoubleBit: ptr[uint64](0), RetiredPending: ptr(false),
			RemappedCorrectable: ptr[uint64](3), RemappedUncorrectable: ptr[uint64](1),
			RemapPending: ptr(false), RemapFailure: ptr(true),
		},
		Violations: nvml.ViolationTimes{
			PowerNs: ptr[uint64](2500000000), ThermalNs: ptr[uint64](0), SyncBoostNs: ptr[uint64](0),
			BoardLimitNs: ptr[uint64](0), LowUtilNs: ptr[uint64](91000000000), ReliabilityNs: ptr[uint64](0),
		},
		NVLinkErrors: &nvml.NVLinkErrorSums{CRCFlit: 1, CRCData: 2, Replay: 3, Recovery: 4},
	}
}

func sampleOf(gpus ...nvml.GPUSample) nvml.TelemetrySample {
	return nvml.TelemetrySample{
		Time:   time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
		Driver: nvml.Driver{Loaded: true, Version: "550.54.15", CUDAVersion: "12.4"},
		GPUs:   gpus,
	}
}

func render(p Pass) string { return string(Append(nil, p)) }

func TestWriteOneGPUWithEveryReading(t *testing.T) {
	got := render(Pass{
		Sample:   sampleOf(fullGPU(0)),
		Hostname: "node-1",
		XIDs:     map[string]uint64{"GPU-00000000-0000-4000-8000-000000000000": 79},
	})
	const l = `gpu="0",UUID="GPU-00000000-0000-4000-8000-000000000000",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",hostname="node-1",DCGM_FI_DRIVER_VERSION="550.54.15"`
	want := strings.ReplaceAll(`# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{L} 1410
# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).
# TYPE DCGM_FI_DEV_MEM_CLOCK gauge
DCGM_FI_DEV_MEM_CLOCK{L} 1215
# HELP DCGM_FI_DEV_MEMORY_TEMP Memory temperature (in C).
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_MEMORY_TEMP{L} 71
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{L} 64
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{L} 312.5
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{L} 123456789
# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Total number of PCIe retries.
# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter
DCGM_FI_DEV_PCIE_REPLAY_COUNTER{L} 2
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{L} 87
# HELP DCGM_FI_DEV_MEM_COPY_UTIL Memory utilization (in %).
# TYPE DCGM_FI_DEV_MEM_COPY_UTIL gauge
DCGM_FI_DEV_MEM_COPY_UTIL{L} 41
# HELP DCGM_FI_DEV_ENC_UTIL Encoder utilization (in %).
# TYPE DCGM_FI_DEV_ENC_UTIL gauge
DCGM_FI_DEV_ENC_UTIL{L} 0
# HELP DCGM_FI_DEV_DEC_UTIL Decoder utilization (in %).
# TYPE DCGM_FI_DEV_DEC_UTIL gauge
DCGM_FI_DEV_DEC_UTIL{L} 3
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{L,err_code="79",err_msg="the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats"} 79
# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in ns).
# TYPE DCGM_FI_DEV_POWER_VIOLATION counter
DCGM_FI_DEV_POWER_VIOLATION{L} 2500000000
# HELP DCGM_FI_DEV_THERMAL_VIOLATION Throttling duration due to thermal constraints (in ns).
# TYPE DCGM_FI_DEV_THERMAL_VIOLATION counter
DCGM_FI_DEV_THERMAL_VIOLATION{L} 0
# HELP DCGM_FI_DEV_SYNC_BOOST_VIOLATION Throttling duration due to sync-boost constraints (in ns).
# TYPE DCGM_FI_DEV_SYNC_BOOST_VIOLATION counter
DCGM_FI_DEV_SYNC_BOOST_VIOLATION{L} 0
# HELP DCGM_FI_DEV_BOARD_LIMIT_VIOLATION Throttling duration due to board limit constraints (in ns).
# TYPE DCGM_FI_DEV_BOARD_LIMIT_VIOLATION counter
DCGM_FI_DEV_BOARD_LIMIT_VIOLATION{L} 0
# HELP DCGM_FI_DEV_LOW_UTIL_VIOLATION Throttling duration due to low utilization (in ns).
# TYPE DCGM_FI_DEV_LOW_UTIL_VIOLATION counter
DCGM_FI_DEV_LOW_UTIL_VIOLATION{L} 91000000000
# HELP DCGM_FI_DEV_RELIABILITY_VIOLATION Throttling duration due to reliability constraints (in ns).
# TYPE DCGM_FI_DEV_RELIABILITY_VIOLATION counter
DCGM_FI_DEV_RELIABILITY_VIOLATION{L} 0
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{L} 10536
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{L} 30000
# HELP DCGM_FI_DEV_FB_RESERVED Framebuffer memory reserved (in MiB).
# TYPE DCGM_FI_DEV_FB_RESERVED gauge
DCGM_FI_DEV_FB_RESERVED{L} 424
# HELP DCGM_FI_DEV_ECC_SBE_VOL_TOTAL Total number of single-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{L} 5
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{L} 0
# HELP DCGM_FI_DEV_ECC_SBE_AGG_TOTAL Total number of single-bit persistent ECC errors.
# TYPE DCGM_FI_DEV_ECC_SBE_AGG_TOTAL counter
DCGM_FI_DEV_ECC_SBE_AGG_TOTAL{L} 17
# HELP DCGM_FI_DEV_ECC_DBE_AGG_TOTAL Total number of double-bit persistent ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_AGG_TOTAL counter
DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{L} 1
# HELP DCGM_FI_DEV_RETIRED_SBE Total number of retired pages due to single-bit errors.
# TYPE DCGM_FI_DEV_RETIRED_SBE counter
DCGM_FI_DEV_RETIRED_SBE{L} 0
# HELP DCGM_FI_DEV_RETIRED_DBE Total number of retired pages due to double-bit errors.
# TYPE DCGM_FI_DEV_RETIRED_DBE counter
DCGM_FI_DEV_RETIRED_DBE{L} 0
# HELP DCGM_FI_DEV_RETIRED_PENDING Whether pages are pending retirement (1) or not (0).
# TYPE DCGM_FI_DEV_RETIRED_PENDING counter
DCGM_FI_DEV_RETIRED_PENDING{L} 0
# HELP DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL Total number of NVLink flow-control CRC errors.
# TYPE DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL counter
DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{L} 1
# HELP DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL Total number of NVLink data CRC errors.
# TYPE DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL counter
DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{L} 2
# HELP DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL Total number of NVLink retries.
# TYPE DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL counter
DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{L} 3
# HELP DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL Total number of NVLink recovery errors.
# TYPE DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL counter
DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{L} 4
# HELP DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS Number of remapped rows for uncorrectable errors.
# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{L} 1
# HELP DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS Number of remapped rows for correctable errors.
# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{L} 3
# HELP DCGM_FI_DEV_ROW_REMAP_FAILURE Whether remapping of rows has failed.
# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge
DCGM_FI_DEV_ROW_REMAP_FAILURE{L} 1
`, "{L", "{"+l)
	if got != want {
		t.Errorf("exposition differs:\n%s", lineDiff(want, got))
	}
}

// lineDiff lists the lines only one of two texts has.
func lineDiff(want, got string) string {
	var b strings.Builder
	wantLines, gotLines := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(want, "\n") {
		wantLines[line] = true
	}
	for _, line := range strings.Split(got, "\n") {
		gotLines[line] = true
		if !wantLines[line] {
			fmt.Fprintf(&b, "+ %s\n", line)
		}
	}
	for _, line := range strings.Split(want, "\n") {
		if !gotLines[line] {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	if b.Len() == 0 {
		return "same lines in another order:\n" + got
	}
	return b.String()
}

func TestWriteLeavesOutWhatNVMLDidNotGive(t *testing.T) {
	// A GeForce-like GPU: temperature, power and memory, nothing else; no
	// XID seen, no host name, not on Kubernetes.
	gpu := nvml.GPUSample{
		Index: 1, UUID: "GPU-1", Name: "NVIDIA GeForce RTX 4090", PCIBusID: "0000:41:00.0",
		TemperatureC: ptr[uint32](45), PowerDrawW: ptr(30.25), MemoryUsedMiB: ptr[uint64](512),
	}
	got := render(Pass{Sample: sampleOf(gpu)})
	const l = `{gpu="1",UUID="GPU-1",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",DCGM_FI_DRIVER_VERSION="550.54.15"}`
	want := `# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP` + l + ` 45
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE` + l + ` 30.25
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED` + l + ` 512
`
	if got != want {
		t.Errorf("exposition differs:\n%s", lineDiff(want, got))
	}
}

func TestWriteEscapesLabelValues(t *testing.T) {
	gpu := nvml.GPUSample{
		Index: 0, UUID: "GPU-0", PCIBusID: "0000:07:00.0",
		Name:         "Odd \"GPU\" C:\\dev\nline two \xff",
		TemperatureC: ptr[uint32](30),
	}
	got := render(Pass{
		Sample:   sampleOf(gpu),
		Hostname: `host"name`,
		Holders:  map[string]podresources.Container{"GPU-0": {Namespace: "ns", Pod: `pod\1`, Name: "c\n"}},
	})
	want := `DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0",pci_bus_id="00000000:07:00.0",device="nvidia0",` +
		`modelName="Odd \"GPU\" C:\\dev\nline two ` + "\uFFFD" + `",hostname="host\"name",DCGM_FI_DRIVER_VERSION="550.54.15",` +
		`container="c\n",namespace="ns",pod="pod\\1"} 30` + "\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("escaped series:\ngot  %s\nwant %s", got, want)
	}
}

func TestWriteMIGInstancesGetTheirOwnMemorySeries(t *testing.T) {
	gpu := fullGPU(2)
	gpu.UtilizationGPU, gpu.UtilizationMemory = nil, nil // NVML gives none in MIG mode
	gpu.MIG = []nvml.MIGSample{
		{MIGDevice: nvml.MIGDevice{Profile: "3g.20gb", GPUInstanceID: 1, ComputeInstanceID: 0, UUID: "MIG-a"}, MemoryUsedMiB: ptr[uint64](1200)},
		// A second compute instance of GPU instance 1: same memory, no second series.
		{MIGDevice: nvml.MIGDevice{Profile: "1c.3g.20gb", GPUInstanceID: 1, ComputeInstanceID: 1, UUID: "MIG-b"}, MemoryUsedMiB: ptr[uint64](1200)},
		{MIGDevice: nvml.MIGDevice{Profile: "1c.2g.10gb", GPUInstanceID: 5, ComputeInstanceID: 0, UUID: "MIG-c"}, MemoryUsedMiB: ptr[uint64](0)},
		// NVML gave no memory reading for this one: no series, not a zero.
		{MIGDevice: nvml.MIGDevice{Profile: "1g.5gb", GPUInstanceID: 13, ComputeInstanceID: 0, UUID: "MIG-d"}},
	}
	got := render(Pass{
		Sample:  sampleOf(gpu),
		Holders: map[string]podresources.Container{"MIG-c": {Namespace: "ml", Pod: "notebook", Name: "jupyter"}},
	})
	const gpuLabels = `gpu="2",UUID="GPU-00000000-0000-4000-8000-000000000002",pci_bus_id="00000000:07:00.0",device="nvidia2",modelName="NVIDIA A100-SXM4-40GB"`
	const driver = `DCGM_FI_DRIVER_VERSION="550.54.15"`
	want := "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n" +
		"DCGM_FI_DEV_FB_USED{" + gpuLabels + "," + driver + "} 30000\n" +
		"DCGM_FI_DEV_FB_USED{" + gpuLabels + `,GPU_I_PROFILE="3g.20gb",GPU_I_ID="1",` + driver + "} 1200\n" +
		"DCGM_FI_DEV_FB_USED{" + gpuLabels + `,GPU_I_PROFILE="2g.10gb",GPU_I_ID="5",` + driver + `,container="jupyter",namespace="ml",pod="notebook"} 0` + "\n"
	if !strings.Contains(got, want) {
		t.Errorf("MIG memory series:\n%s\nwant\n%s", got, want)
	}
	if strings.Count(got, "GPU_I_ID") != 2 {
		t.Errorf("only FB_USED has per-instance series, one per GPU instance that gave a reading:\n%s", got)
	}
	if want := "DCGM_FI_DEV_FB_RESERVED{" + gpuLabels + "," + driver + "} 424\n"; !strings.Contains(got, want) {
		t.Errorf("the driver's reserve is the GPU's, not an instance's: want\n%s\nin\n%s", want, got)
	}
	if strings.Contains(got, "DCGM_FI_DEV_GPU_UTIL") {
		t.Errorf("a GPU in MIG mode gave no utilization, yet it is there:\n%s", got)
	}
	if !strings.Contains(got, "DCGM_FI_DEV_GPU_TEMP{"+gpuLabels+","+driver+"} 64\n") {
		t.Errorf("the GPU's own readings stay on the GPU's series:\n%s", got)
	}
}

func TestWriteLostGPUKeepsOnlyItsLastXID(t *testing.T) {
	lost := fullGPU(3)
	lost.Lost, lost.Error = true, "reading power: ERROR_GPU_IS_LOST"
	got := render(Pass{Sample: sampleOf(fullGPU(0), lost), XIDs: map[string]uint64{lost.UUID: 79}})
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, lost.UUID) && !strings.HasPrefix(line, "DCGM_FI_DEV_XID_ERRORS{") {
			t.Errorf("a lost GPU still has a series: %s", line)
		}
	}
	if !strings.Contains(got, `DCGM_FI_DEV_XID_ERRORS{gpu="3",`) {
		t.Errorf("the lost GPU's last XID is gone:\n%s", got)
	}
	if !strings.Contains(got, `DCGM_FI_DEV_GPU_TEMP{gpu="0",`) {
		t.Errorf("the GPU beside it lost its series:\n%s", got)
	}
}

func TestWriteOrdersSeriesByFieldThenGPU(t *testing.T) {
	got := render(Pass{Sample: sampleOf(fullGPU(0), fullGPU(1))})
	first := strings.Index(got, `DCGM_FI_DEV_GPU_TEMP{gpu="0"`)
	second := strings.Index(got, `DCGM_FI_DEV_GPU_TEMP{gpu="1"`)
	next := strings.Index(got, "# HELP DCGM_FI_DEV_POWER_USAGE")
	if first < 0 || first > second || second > next {
		t.Errorf("GPU_TEMP series not together in GPU order before the next field:\n%s", got)
	}
	if strings.Count(got, "# TYPE DCGM_FI_DEV_GPU_TEMP") != 1 {
		t.Errorf("GPU_TEMP has more than one TYPE line")
	}
	if again := render(Pass{Sample: sampleOf(fullGPU(0), fullGPU(1))}); again != got {
		t.Error("the same pass written twice differs")
	}
}

func TestXIDWithoutAKnownMeaning(t *testing.T) {
	got := render(Pass{Sample: sampleOf(fullGPU(0)), XIDs: map[string]uint64{"GPU-00000000-0000-4000-8000-000000000000": 9999}})
	if !strings.Contains(got, `err_code="9999",err_msg="Unknown Error"} 9999`) {
		t.Errorf("an unknown XID:\n%s", got)
	}
}

func TestNVMLBusID(t *testing.T) {
	for sysfs, want := range map[string]string{
		"0000:07:00.0":     "00000000:07:00.0",
		"0000:bd:00.0":     "00000000:BD:00.0",
		"10000:01:00.0":    "00010000:01:00.0",
		"00000000:0f:00.0": "00000000:0F:00.0",
		"":                 "",
	} {
		if got := nvmlBusID(sysfs); got != want {
			t.Errorf("nvmlBusID(%q) = %q, want %q", sysfs, got, want)
		}
	}
}

func TestGPUInstanceProfile(t *testing.T) {
	for profile, want := range map[string]string{
		"1g.5gb":        "1g.5gb",
		"3g.20gb":       "3g.20gb",
		"1c.3g.20gb":    "3g.20gb",
		"2c.4g.20gb+me": "4g.20gb+me",
		"1g.10gb+me":    "1g.10gb+me",
	} {
		if got := gpuInstanceProfile(profile); got != want {
			t.Errorf("gpuInstanceProfile(%q) = %q, want %q", profile, got, want)
		}
	}
}

package healthagent

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

var t0 = time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)

func u64(v uint64) *uint64 { return &v }
func yes() *bool           { v := true; return &v }

// healthyGPU is GPU i as a sample reads it, with energy e.
func healthyGPU(i int, energy uint64) nvml.GPUSample {
	return nvml.GPUSample{
		Index: i, UUID: "GPU-" + string(rune('a'+i)), PCIBusID: "0000:07:00.0",
		EnergyMilliJoules: u64(energy), PCIeReplays: u64(0),
		ECC: nvml.ECCCounters{UncorrectedVolatile: u64(0), CorrectedVolatile: u64(0)},
	}
}

func sampleOf(at time.Time, gpus ...nvml.GPUSample) nvml.TelemetrySample {
	return nvml.TelemetrySample{Time: at, Driver: nvml.Driver{Loaded: true, Version: "550.54.15"}, GPUs: gpus}
}

func classes(faults []gpuhealth.Fault) []gpuhealth.FaultClass {
	var out []gpuhealth.FaultClass
	for _, f := range faults {
		out = append(out, f.Class)
	}
	return out
}

func TestTrackerFaultClasses(t *testing.T) {
	for _, tc := range []struct {
		description string
		gpu         func(g *nvml.GPUSample)
		event       *nvml.Event
		want        []gpuhealth.FaultClass
	}{
		{description: "a healthy GPU has no fault", want: nil},
		{description: "a critical XID event holds xid_critical",
			event: &nvml.Event{Kind: nvml.EventXID, XID: 79, GPUIndex: 0}, want: []gpuhealth.FaultClass{gpuhealth.ClassXIDCritical}},
		{description: "an XID outside EKS's list is xid_other",
			event: &nvml.Event{Kind: nvml.EventXID, XID: 43, GPUIndex: 0}, want: []gpuhealth.FaultClass{gpuhealth.ClassXIDOther}},
		{description: "a double-bit ECC event is ecc_uncorrectable",
			event: &nvml.Event{Kind: nvml.EventECCDoubleBit, GPUIndex: 0}, want: []gpuhealth.FaultClass{gpuhealth.ClassECCUncorrectable}},
		{description: "a single-bit ECC event is no fault",
			event: &nvml.Event{Kind: nvml.EventECCSingleBit, GPUIndex: 0}, want: nil},
		{description: "a GPU that answers ERROR_GPU_IS_LOST is gpu_lost",
			gpu: func(g *nvml.GPUSample) { *g = nvml.GPUSample{Index: 0, Lost: true} }, want: []gpuhealth.FaultClass{gpuhealth.ClassGPULost}},
		{description: "uncorrected volatile ECC errors are ecc_uncorrectable",
			gpu: func(g *nvml.GPUSample) { g.ECC.UncorrectedVolatile = u64(2) }, want: []gpuhealth.FaultClass{gpuhealth.ClassECCUncorrectable}},
		{description: "a row remap failure is row_remap_failure",
			gpu: func(g *nvml.GPUSample) { g.ECC.RemapFailure = yes() }, want: []gpuhealth.FaultClass{gpuhealth.ClassRowRemapFailure}},
		{description: "a pending row remap is retirement_pending",
			gpu: func(g *nvml.GPUSample) { g.ECC.RemapPending = yes() }, want: []gpuhealth.FaultClass{gpuhealth.ClassRetirementPending}},
		{description: "pending page retirement is retirement_pending",
			gpu: func(g *nvml.GPUSample) { g.ECC.RetiredPending = yes() }, want: []gpuhealth.FaultClass{gpuhealth.ClassRetirementPending}},
		{description: "growing PCIe replays are pcie_replays",
			gpu: func(g *nvml.GPUSample) { g.PCIeReplays = u64(7) }, want: []gpuhealth.FaultClass{gpuhealth.ClassPCIeReplays}},
		{description: "growing NVLink errors are nvlink_errors",
			gpu: func(g *nvml.GPUSample) { g.NVLinkErrors = &nvml.NVLinkErrorSums{CRCFlit: 3} }, want: []gpuhealth.FaultClass{gpuhealth.ClassNVLinkErrors}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			tr := newTracker(time.Minute, 0)
			first := healthyGPU(0, 100)
			first.NVLinkErrors = &nvml.NVLinkErrorSums{}
			tr.Observe(sampleOf(t0, first), nil)
			second := healthyGPU(0, 200)
			second.NVLinkErrors = &nvml.NVLinkErrorSums{}
			if tc.gpu != nil {
				tc.gpu(&second)
			}
			tr.Observe(sampleOf(t0.Add(5*time.Second), second), nil)
			if tc.event != nil {
				e := *tc.event
				e.Time = t0.Add(6 * time.Second)
				tr.Event(e)
			}
			require.Equal(t, tc.want, classes(tr.Faults(t0.Add(7*time.Second))))
		})
	}
}

func TestTrackerHeldFaultClearsOnlyOnResetEvidence(t *testing.T) {
	tr := newTracker(time.Minute, 0)
	tr.Observe(sampleOf(t0, healthyGPU(0, 1000), healthyGPU(1, 1000)), nil)
	tr.Event(nvml.Event{Time: t0, Kind: nvml.EventXID, XID: 48, GPUIndex: 1})
	fatal := gpuhealth.DefaultFatal()

	// Time alone, with the counters growing, clears nothing.
	for i := 1; i <= 100; i++ {
		at := t0.Add(time.Duration(i) * time.Hour)
		tr.Observe(sampleOf(at, healthyGPU(0, 1000+uint64(i)), healthyGPU(1, 1000+uint64(i))), nil)
		require.Equal(t, corev1.ConditionFalse, tr.Verdict(at, fatal).Status, "hour %d", i)
	}
	// GPU 0 being reset clears nothing on GPU 1.
	at := t0.Add(101 * time.Hour)
	tr.Observe(sampleOf(at, healthyGPU(0, 5), healthyGPU(1, 1200)), nil)
	require.Equal(t, corev1.ConditionFalse, tr.Verdict(at, fatal).Status)
	// GPU 1's energy counter going backwards is its reset.
	tr.Observe(sampleOf(at.Add(time.Second), healthyGPU(0, 6), healthyGPU(1, 3)), nil)
	require.Equal(t, corev1.ConditionTrue, tr.Verdict(at, fatal).Status)
}

func TestTrackerLostGPUClearsWhenItAnswersAgain(t *testing.T) {
	tr := newTracker(time.Minute, 0)
	tr.Observe(sampleOf(t0, healthyGPU(0, 1000)), nil)
	tr.Event(nvml.Event{Time: t0, Kind: nvml.EventXID, XID: 79, GPUIndex: 0})
	tr.Observe(sampleOf(t0.Add(time.Second), nvml.GPUSample{Index: 0, Lost: true}), nil)
	faults := tr.Faults(t0.Add(time.Second))
	require.Equal(t, []gpuhealth.FaultClass{gpuhealth.ClassXIDCritical}, classes(faults), "XID 79's event speaks for the lost GPU")
	require.Equal(t, "NvidiaXID79Error", faults[0].Reason())

	// Answering again (even with its counters higher) is the GPU back.
	tr.Observe(sampleOf(t0.Add(2*time.Second), healthyGPU(0, 2000)), nil)
	require.Empty(t, tr.Faults(t0.Add(2*time.Second)))
}

func TestTrackerGrowthFaultClearsAfterAWindowWithoutGrowth(t *testing.T) {
	tr := newTracker(time.Minute, 0)
	g := healthyGPU(0, 1)
	tr.Observe(sampleOf(t0, g), nil)
	g.PCIeReplays = u64(10)
	tr.Observe(sampleOf(t0.Add(5*time.Second), g), nil)
	require.Equal(t, []gpuhealth.FaultClass{gpuhealth.ClassPCIeReplays}, classes(tr.Faults(t0.Add(5*time.Second))))
	// No growth for less than a window: still standing.
	tr.Observe(sampleOf(t0.Add(50*time.Second), g), nil)
	require.Len(t, tr.Faults(t0.Add(50*time.Second)), 1)
	// A whole window without growth: gone.
	tr.Observe(sampleOf(t0.Add(66*time.Second), g), nil)
	require.Empty(t, tr.Faults(t0.Add(66*time.Second)))
}

func TestTrackerDeviceCount(t *testing.T) {
	tr := newTracker(time.Minute, 3)
	tr.Observe(sampleOf(t0, healthyGPU(0, 1), healthyGPU(1, 1)), nil)
	faults := tr.Faults(t0)
	require.Equal(t, []gpuhealth.FaultClass{gpuhealth.ClassDeviceCount}, classes(faults))
	require.Nil(t, faults[0].GPU, "a device-count fault is the node's")
	tr.Observe(sampleOf(t0.Add(time.Second), healthyGPU(0, 2), healthyGPU(1, 2), healthyGPU(2, 2)), nil)
	require.Empty(t, tr.Faults(t0.Add(time.Second)))
}

func TestTrackerUnknownWithoutDriverOrGPU(t *testing.T) {
	for _, tc := range []struct {
		description string
		sample      nvml.TelemetrySample
		err         error
		reason      string
	}{
		{"no driver", nvml.TelemetrySample{Driver: nvml.Driver{Reason: "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)"}}, nil, gpuhealth.ReasonDriverNotLoaded},
		{"driver without GPUs", nvml.TelemetrySample{Driver: nvml.Driver{Loaded: true}}, nil, gpuhealth.ReasonNoGPU},
		{"NVML failing", nvml.TelemetrySample{Driver: nvml.Driver{Loaded: true}}, errors.New("counting GPUs through NVML: Unknown Error"), gpuhealth.ReasonNVMLError},
	} {
		t.Run(tc.description, func(t *testing.T) {
			tr := newTracker(time.Minute, 8)
			tr.Observe(tc.sample, tc.err)
			v := tr.Verdict(t0, gpuhealth.DefaultFatal())
			require.Equal(t, corev1.ConditionUnknown, v.Status)
			require.Equal(t, tc.reason, v.Reason)
		})
	}
}

func TestTrackerRestoresHeldFaultsUnlessTheGPUWasReset(t *testing.T) {
	before := newTracker(time.Minute, 0)
	before.Observe(sampleOf(t0, healthyGPU(0, 1000), healthyGPU(1, 1000)), nil)
	before.Event(nvml.Event{Time: t0, Kind: nvml.EventXID, XID: 79, GPUIndex: 0})
	before.Event(nvml.Event{Time: t0, Kind: nvml.EventXID, XID: 94, GPUIndex: 1})
	saved, err := decodeState(before.save().encode())
	require.NoError(t, err)

	// The agent restarts; GPU 1 was reset while it was away.
	after := newTracker(time.Minute, 0)
	after.restore(saved)
	after.Observe(sampleOf(t0.Add(time.Minute), healthyGPU(0, 1100), healthyGPU(1, 10)), nil)
	faults := after.Faults(t0.Add(time.Minute))
	require.Len(t, faults, 1)
	require.Equal(t, uint64(79), faults[0].XID)
	require.Equal(t, 0, faults[0].GPU.Index)
	require.True(t, faults[0].Since.Equal(t0), "the fault keeps the time it was first seen")
}

package nvmltest

import (
	"encoding/binary"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestScriptFillsTheSampleBuffer(t *testing.T) {
	f := NewDGXA100()
	f.Script(2, Step{UtilizationSamples: []uint32{10, 20, 30, 40}, MemoryUtilization: 5, PowerDrawMW: 200000},
		Step{UtilizationSamples: []uint32{90}, PowerDrawMW: 100000})
	dev := f.Server.Devices[2]
	start := uint64(clockStart.UnixMicro())

	valueType, samples, ret := dev.GetSamples(gonvml.GPU_UTILIZATION_SAMPLES, 0)
	if ret != gonvml.SUCCESS || valueType != gonvml.VALUE_TYPE_UNSIGNED_INT {
		t.Fatalf("GetSamples = %v, %v", valueType, ret)
	}
	wantTimes := []uint64{start - 750_000, start - 500_000, start - 250_000, start}
	for i, s := range samples {
		if s.TimeStamp != wantTimes[i] || binary.NativeEndian.Uint32(s.SampleValue[:4]) != uint32(10*(i+1)) {
			t.Errorf("sample %d = %d at %d, want %d at %d", i, binary.NativeEndian.Uint32(s.SampleValue[:4]), s.TimeStamp, 10*(i+1), wantTimes[i])
		}
	}
	if _, _, ret := dev.GetSamples(gonvml.GPU_UTILIZATION_SAMPLES, start); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("GetSamples after the newest sample answered %v, want ERROR_NOT_FOUND", ret)
	}
	if u, _ := dev.GetUtilizationRates(); u.Gpu != 40 || u.Memory != 5 {
		t.Errorf("utilization rates = %+v, want the last sample and the memory utilization", u)
	}

	for range 3 {
		f.Advance()
	}
	if got, want := f.Now(), clockStart.Add(3*time.Second); !got.Equal(want) {
		t.Errorf("clock = %v, want %v", got, want)
	}
	_, samples, _ = dev.GetSamples(gonvml.GPU_UTILIZATION_SAMPLES, start)
	if len(samples) != 3 || samples[2].TimeStamp != start+3_000_000 {
		t.Errorf("after three steps, the last of them repeated: %d new samples, the newest at %d", len(samples), samples[len(samples)-1].TimeStamp)
	}
	if energy, _ := dev.GetTotalEnergyConsumption(); energy != 300_000 {
		t.Errorf("energy = %d mJ, want 100 W for 3 s", energy)
	}
	if energy, _ := f.Server.Devices[0].GetTotalEnergyConsumption(); energy != 3*61_000 {
		t.Errorf("an unscripted GPU's energy = %d mJ, want 61 W for 3 s", energy)
	}
	if v, _ := f.Server.Devices[0].GetViolationStatus(gonvml.PERF_POLICY_LOW_UTILIZATION); v.ViolationTime != uint64(3*time.Second) || v.ReferenceTime != start+3_000_000 {
		t.Errorf("an idle GPU's low-utilization violation = %+v", v)
	}
	if _, _, ret := f.Server.Devices[0].GetSamples(gonvml.GPU_UTILIZATION_SAMPLES, 0); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("an unscripted GPU's buffer answered %v, want ERROR_NOT_FOUND", ret)
	}
}

func TestEventSetWaitHonoursItsTimeout(t *testing.T) {
	f := NewDGXA100()
	set, _ := f.Server.EventSetCreate()
	dev := f.Server.Devices[1]
	if ret := dev.RegisterEvents(gonvml.EventTypeGpuUnavailableError, set); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("registering an event type the GPU does not report answered %v", ret)
	}
	if ret := dev.RegisterEvents(gonvml.EventTypeXidCriticalError, set); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := set.Wait(0); ret != gonvml.ERROR_TIMEOUT {
		t.Errorf("Wait without events answered %v, want ERROR_TIMEOUT", ret)
	}
	if n := f.FireXID(1, 94); n != 1 {
		t.Fatalf("FireXID reached %d sets", n)
	}
	data, ret := set.Wait(1000)
	if ret != gonvml.SUCCESS || data.EventData != 94 || data.Device != dev || data.GpuInstanceId != NoInstance {
		t.Errorf("Wait = %+v, %v", data, ret)
	}
	if ret := set.Free(); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := set.Wait(1000); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("Wait on a freed set answered %v", ret)
	}
	if n := f.FireXID(1, 94); n != 0 {
		t.Errorf("an event reached %d freed sets", n)
	}
}

func TestConnectNVLink(t *testing.T) {
	f := NewDGXA100()
	f.ConnectNVLink(3, 4, 2)
	dev := f.Server.Devices[3]
	for link, want := range []gonvml.Return{gonvml.SUCCESS, gonvml.SUCCESS, gonvml.ERROR_INVALID_ARGUMENT} {
		if _, ret := dev.GetNvLinkState(link); ret != want {
			t.Errorf("link %d answered %v, want %v", link, ret, want)
		}
	}
	if pci, _ := dev.GetNvLinkRemotePciInfo(1); string(pciBusID(pci)) != "00000000:87:00.0" {
		t.Errorf("the link's far end is %q, want GPU 4", pciBusID(pci))
	}
	f.GPUs[3].NVLinks[1].Replay = 9
	if n, ret := dev.GetNvLinkErrorCounter(1, gonvml.NVLINK_ERROR_DL_REPLAY); n != 9 || ret != gonvml.SUCCESS {
		t.Errorf("replay counter = %d, %v", n, ret)
	}
	if _, ret := f.Server.Devices[0].GetNvLinkState(0); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("a GPU without NVLink answered %v", ret)
	}
}

func pciBusID(pci gonvml.PciInfo) []byte {
	var b []byte
	for _, c := range pci.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return b
}

func TestCallsCountsEveryCall(t *testing.T) {
	f := NewDGXA100()
	before := f.Calls()
	dev, _ := f.Server.DeviceGetHandleByIndex(0)
	_, _ = dev.GetUUID()
	_, _ = dev.GetFanSpeed() // not supported, still a call
	_, _ = f.Server.Devices[5].GetUUID()
	got := f.Calls()
	if got.Total-before.Total != 4 {
		t.Errorf("counted %d calls, want 4", got.Total-before.Total)
	}
	if got.ByMethod["GetUUID"] != 2 || got.ByMethod["DeviceGetHandleByIndex"] != 1 || got.ByMethod["GetFanSpeed"] != 1 {
		t.Errorf("calls by method = %v", got.ByMethod)
	}
}

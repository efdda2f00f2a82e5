package nvmltest

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestLostGPUAnswersAgainAfterRecoverWithItsSinceLoadCountersAtZero(t *testing.T) {
	f := NewDGXA100()
	f.AddECCErrors(2, 5, 3)
	f.GPUs[2].EnergyMJ = 12345
	f.GPUs[2].RemapPending = true
	dev := f.Server.Devices[2]

	f.LoseGPU(2)
	if _, ret := dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Fatalf("a lost GPU answered %v, want ERROR_GPU_IS_LOST", ret)
	}
	f.RecoverGPU(2)
	for _, c := range []struct {
		description string
		kind        gonvml.MemoryErrorType
		counter     gonvml.EccCounterType
		want        uint64
	}{
		{"uncorrected volatile starts over", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC, 0},
		{"corrected volatile starts over", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC, 0},
		{"uncorrected aggregate is kept", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC, 3},
		{"corrected aggregate is kept", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC, 5},
	} {
		got, ret := dev.GetTotalEccErrors(c.kind, c.counter)
		if ret != gonvml.SUCCESS || got != c.want {
			t.Errorf("%s: got %d (%v), want %d", c.description, got, ret, c.want)
		}
	}
	if e, ret := dev.GetTotalEnergyConsumption(); ret != gonvml.SUCCESS || e != 0 {
		t.Errorf("energy after the reset = %d (%v), want 0", e, ret)
	}
	if _, _, pending, _, _ := dev.GetRemappedRows(); pending {
		t.Error("a pending row remap survived the reset")
	}
	if got := f.GPUCalls(2).ByMethod["GetTotalEccErrors"]; got != 5 {
		t.Errorf("counted %d GetTotalEccErrors calls, want 5", got)
	}
}

func TestFleetWithFewerGPUsEnumeratesOnlyThem(t *testing.T) {
	f := NewDGXA100WithGPUs(6)
	if n, ret := f.Server.DeviceGetCount(); ret != gonvml.SUCCESS || n != 6 {
		t.Fatalf("DeviceGetCount = %d, %v; want 6", n, ret)
	}
	if _, ret := f.Server.DeviceGetHandleByIndex(6); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("handle of hidden GPU 6 by index: %v, want ERROR_INVALID_ARGUMENT", ret)
	}
	if _, ret := f.Server.DeviceGetHandleByUUID(f.Device(7).UUID); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("handle of hidden GPU 7 by UUID: %v, want ERROR_NOT_FOUND", ret)
	}
	if _, ret := f.Server.DeviceGetHandleByIndex(5); ret != gonvml.SUCCESS {
		t.Errorf("handle of GPU 5: %v", ret)
	}
	if got := f.Calls().ByMethod["DeviceGetCount"]; got != 1 {
		t.Errorf("counted %d DeviceGetCount calls, want 1", got)
	}
}

func TestDriverUnloadedFailsInitUntilLoaded(t *testing.T) {
	f := NewDGXA100()
	f.SetDriverLoaded(false)
	if ret := f.Server.Init(); ret != gonvml.ERROR_DRIVER_NOT_LOADED {
		t.Fatalf("Init with the driver unloaded: %v, want ERROR_DRIVER_NOT_LOADED", ret)
	}
	f.SetDriverLoaded(true)
	if ret := f.Server.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("Init with the driver loaded: %v", ret)
	}
}

package nvmltest

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestFleetAnswersEveryCall(t *testing.T) {
	f := NewDGXA100()
	dev, ret := f.Server.DeviceGetHandleByIndex(3)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if uuid, _ := dev.GetUUID(); uuid != "GPU-00000000-0000-4000-8000-000000000003" {
		t.Errorf("uuid = %s", uuid)
	}
	if _, ret := dev.GetFanSpeed(); ret != gonvml.ERROR_NOT_SUPPORTED {
		t.Errorf("an unmodelled call returned %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if ret := dev.SetPersistenceMode(gonvml.FEATURE_ENABLED); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if mode, _ := dev.GetPersistenceMode(); mode != gonvml.FEATURE_ENABLED || !f.GPUs[3].Persistence {
		t.Error("persistence did not stick")
	}
	f.GPUs[3].Lost = true
	if _, ret := dev.GetUUID(); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("lost GPU answered %v", ret)
	}
}

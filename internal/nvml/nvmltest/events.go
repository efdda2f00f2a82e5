package nvmltest

import (
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// This file owns NVML events: event sets (nvmlEventSetCreate, Wait, Free),
// registration (nvmlDeviceGetSupportedEventTypes, nvmlDeviceRegisterEvents:
// ERROR_NOT_SUPPORTED for a type the GPU does not report, as in nvml.h), and
// events a test fires, which reach every set the GPU is registered on for
// that type. Wait blocks for real time, up to its timeout, as NVML's does.

// NoInstance is NVML's GPU and compute instance id of an event that no MIG
// instance is named for (nvmlEventData_t).
const NoInstance = 0xFFFFFFFF

// eventQueueLen is how many undelivered events a set holds before FireEvent
// blocks.
const eventQueueLen = 1024

// eventSet is one nvmlEventSet_t.
type eventSet struct {
	mock.EventSet
	queue    chan gonvml.EventData
	freed    chan struct{}
	freeOnce sync.Once
}

// FireXID reports XID xid on GPU gpu, attributed to no MIG instance. It
// returns how many event sets it reached.
func (f *Fleet) FireXID(gpu int, xid uint64) int {
	return f.FireEvent(gpu, gonvml.EventData{
		EventType:         gonvml.EventTypeXidCriticalError,
		EventData:         xid,
		GpuInstanceId:     NoInstance,
		ComputeInstanceId: NoInstance,
	})
}

// FireEvent reports an event on GPU gpu (data.Device is set to it) to every
// event set the GPU is registered on for data.EventType, and returns how
// many that was. Set GpuInstanceId and ComputeInstanceId to NoInstance for
// an event of the whole GPU.
func (f *Fleet) FireEvent(gpu int, data gonvml.EventData) int {
	data.Device = f.Server.Devices[gpu]
	g := f.GPUs[gpu]
	g.mu.Lock()
	var sets []*eventSet
	for set, mask := range g.eventSets {
		if mask&data.EventType != 0 {
			sets = append(sets, set)
		}
	}
	g.mu.Unlock()
	for _, set := range sets {
		select {
		case set.queue <- data:
		case <-set.freed:
		}
	}
	return len(sets)
}

func (f *Fleet) wireEventSets() {
	s := f.Server
	s.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return f.newEventSet(), gonvml.SUCCESS }
	s.EventSetWaitFunc = func(set gonvml.EventSet, timeoutMs uint32) (gonvml.EventData, gonvml.Return) {
		return set.Wait(timeoutMs)
	}
	s.EventSetFreeFunc = func(set gonvml.EventSet) gonvml.Return { return set.Free() }
}

func (f *Fleet) newEventSet() *eventSet {
	set := &eventSet{queue: make(chan gonvml.EventData, eventQueueLen), freed: make(chan struct{})}
	set.WaitFunc = func(timeoutMs uint32) (gonvml.EventData, gonvml.Return) {
		select {
		case <-set.freed:
			return gonvml.EventData{}, gonvml.ERROR_INVALID_ARGUMENT
		case data := <-set.queue:
			return data, gonvml.SUCCESS
		default:
		}
		timer := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
		defer timer.Stop()
		select {
		case data := <-set.queue:
			return data, gonvml.SUCCESS
		case <-set.freed:
			return gonvml.EventData{}, gonvml.ERROR_INVALID_ARGUMENT
		case <-timer.C:
			return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
		}
	}
	set.FreeFunc = func() gonvml.Return {
		ret := gonvml.ERROR_INVALID_ARGUMENT // freed twice
		set.freeOnce.Do(func() {
			close(set.freed)
			for _, g := range f.GPUs {
				g.mu.Lock()
				delete(g.eventSets, set)
				g.mu.Unlock()
			}
			ret = gonvml.SUCCESS
		})
		return ret
	}
	f.calls.wrap(&set.EventSet, "EventSet.", nil)
	return set
}

func (f *Fleet) wireEvents(dev *dgxa100.Device, gpu *GPU) {
	dev.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.SupportedEvents, ok(gpu)
	}
	dev.RegisterEventsFunc = func(mask uint64, s gonvml.EventSet) gonvml.Return {
		set, isSet := s.(*eventSet)
		if !isSet {
			return gonvml.ERROR_INVALID_ARGUMENT
		}
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		switch {
		case gpu.Lost:
			return gonvml.ERROR_GPU_IS_LOST
		case mask&^gpu.SupportedEvents != 0:
			return gonvml.ERROR_NOT_SUPPORTED
		}
		select {
		case <-set.freed:
			return gonvml.ERROR_INVALID_ARGUMENT
		default:
		}
		if gpu.eventSets == nil {
			gpu.eventSets = map[*eventSet]uint64{}
		}
		gpu.eventSets[set] |= mask
		return gonvml.SUCCESS
	}
}

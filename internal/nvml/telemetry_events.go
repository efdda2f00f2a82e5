package nvml

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns WatchEvents: NVML's event set, registered on every GPU for
// the events that mean trouble, read by one goroutine per watch. The
// goroutine waits in nvmlEventSetWait without holding g.mu, so Samples go
// on while it waits; it sees ctx end (or Close) within one wait.

// watchedEvents are the NVML event types a watch registers, where the GPU
// supports them (nvmlDeviceGetSupportedEventTypes).
const watchedEvents = gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError |
	gonvml.EventTypeSingleBitEccError | gonvml.EventTypeGpuUnavailableError

// eventWaitMs is how long one nvmlEventSetWait may block: the longest a
// watch takes to notice that its context ended.
const eventWaitMs = 500

// EventWait is eventWaitMs as a duration: an event NVML holds reaches a
// watch's channel within it.
const EventWait = eventWaitMs * time.Millisecond

// noInstance is NVML's gpuInstanceId/computeInstanceId for an event no MIG
// instance is named for (nvmlEventData_t in nvml.h).
const noInstance = 0xFFFFFFFF

// watches are the running WatchEvents loops. Guarded by g.mu; the loops
// themselves never take it.
type watches struct {
	stop    chan struct{} // closed by stopAll
	running sync.WaitGroup
}

// start registers one loop and returns the channel that tells it to stop.
func (w *watches) start() <-chan struct{} {
	if w.stop == nil {
		w.stop = make(chan struct{})
	}
	w.running.Add(1)
	return w.stop
}

// stopAll tells every loop to stop and waits until they have freed their
// event sets and closed their channels.
func (w *watches) stopAll() {
	if w.stop != nil {
		close(w.stop)
		w.stop = nil
	}
	w.running.Wait()
}

// WatchEvents registers every GPU for XID, ECC and GPU-unavailable events
// and reports them until ctx ends or Close is called; then the event set is
// freed and the channel closed. A GPU that offers none of these events (or
// cannot be asked) is left out; it is an error when no GPU can be watched,
// when there is no driver (ErrNoDriver) or when NVML offers no event set.
// Event.Detail is left for the caller to fill.
func (g *GPUs) WatchEvents(ctx context.Context) (<-chan Event, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ensureInit() {
		return nil, fmt.Errorf("watching GPU events: %w (%s)", ErrNoDriver, g.reason)
	}
	set, ret := call1(g.lib.EventSetCreate)
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("creating an NVML event set to watch GPU events: %w", explain(ret))
	}
	gpus, err := g.registerEvents(set)
	if err != nil {
		_ = callReturn(set.Free) // nothing was registered: a failed free leaks nothing the caller can act on
		return nil, err
	}
	events := make(chan Event, 16)
	stop := g.watches.start()
	go g.watchEvents(ctx, stop, set, gpus, events)
	return events, nil
}

// registerEvents registers every GPU that supports them for watchedEvents
// and returns the registered GPUs by handle.
func (g *GPUs) registerEvents(set gonvml.EventSet) (map[gonvml.Device]gpuRef, error) {
	count, ret := call1(g.lib.DeviceGetCount)
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("counting GPUs through NVML: %w", explain(ret))
	}
	gpus := map[gonvml.Device]gpuRef{}
	var skipped []string
	for i := 0; i < count; i++ {
		dev, ret := call1(func() (gonvml.Device, gonvml.Return) { return g.lib.DeviceGetHandleByIndex(i) })
		if ret != gonvml.SUCCESS {
			skipped = append(skipped, fmt.Sprintf("GPU %d: getting the device handle: %v", i, ret))
			continue
		}
		ref := gpuRef{index: i}
		if uuid, ret := call1(dev.GetUUID); ret == gonvml.SUCCESS {
			ref.uuid = uuid
		}
		supported, ret := call1(dev.GetSupportedEventTypes)
		if ret != gonvml.SUCCESS {
			skipped = append(skipped, fmt.Sprintf("GPU %d: reading supported events: %v", i, ret))
			continue
		}
		mask := supported & watchedEvents
		if mask == 0 {
			skipped = append(skipped, fmt.Sprintf("GPU %d: offers no XID or ECC events", i))
			continue
		}
		if ret := callReturn(func() gonvml.Return { return dev.RegisterEvents(mask, set) }); ret != gonvml.SUCCESS {
			skipped = append(skipped, fmt.Sprintf("GPU %d: registering for events: %v", i, ret))
			continue
		}
		gpus[dev] = ref
	}
	if len(gpus) == 0 {
		if count == 0 {
			return nil, errors.New("watching GPU events: NVML lists no GPU")
		}
		return nil, fmt.Errorf("watching GPU events: no GPU can be watched (%s)", strings.Join(skipped, "; "))
	}
	return gpus, nil
}

// watchEvents is the loop of one watch.
func (g *GPUs) watchEvents(ctx context.Context, stop <-chan struct{}, set gonvml.EventSet, gpus map[gonvml.Device]gpuRef, events chan<- Event) {
	defer g.watches.running.Done()
	defer close(events)
	defer func() { _ = callReturn(set.Free) }()
	ended := func() bool {
		select {
		case <-ctx.Done():
			return true
		case <-stop:
			return true
		default:
			return false
		}
	}
	for !ended() {
		data, ret := call1(func() (gonvml.EventData, gonvml.Return) { return set.Wait(eventWaitMs) })
		switch ret {
		case gonvml.SUCCESS:
			e, ok := eventFromNVML(data, gpus, g.now())
			if !ok {
				continue
			}
			select {
			case events <- e:
			case <-ctx.Done():
				offer(events, e)
				return
			case <-stop:
				offer(events, e)
				return
			}
		case gonvml.ERROR_TIMEOUT:
		case gonvml.ERROR_UNINITIALIZED:
			return // NVML was shut down under the watch
		default:
			// ERROR_GPU_IS_LOST and the like: the wait returns at once,
			// so pause as long as a wait would before asking again.
			timer := time.NewTimer(eventWaitMs * time.Millisecond)
			select {
			case <-timer.C:
			case <-ctx.Done():
			case <-stop:
			}
			timer.Stop()
		}
	}
}

// offer hands e over if the channel has room or a reader waits, and drops
// it otherwise: NVML delivers an event once, and a watch that ends must
// neither lose one that a reader draining the channel would take nor wait
// for a reader that left.
func offer(events chan<- Event, e Event) {
	select {
	case events <- e:
	default:
	}
}

// eventFromNVML turns NVML's event data into an Event; ok is false for an
// event type a watch does not register.
func eventFromNVML(data gonvml.EventData, gpus map[gonvml.Device]gpuRef, at time.Time) (Event, bool) {
	e := Event{
		Time:              at,
		GPUIndex:          -1,
		GPUInstanceID:     instanceID(data.GpuInstanceId),
		ComputeInstanceID: instanceID(data.ComputeInstanceId),
	}
	switch {
	case data.EventType&gonvml.EventTypeXidCriticalError != 0:
		e.Kind, e.XID = EventXID, data.EventData // 999: an XID NVML does not know
	case data.EventType&gonvml.EventTypeDoubleBitEccError != 0:
		e.Kind, e.Data = EventECCDoubleBit, data.EventData
	case data.EventType&gonvml.EventTypeSingleBitEccError != 0:
		e.Kind, e.Data = EventECCSingleBit, data.EventData
	case data.EventType&gonvml.EventTypeGpuUnavailableError != 0:
		e.Kind, e.Data = EventGPUUnavailable, data.EventData
	default:
		return Event{}, false
	}
	if ref, ok := gpus[data.Device]; ok {
		e.GPUIndex, e.UUID = ref.index, ref.uuid
	}
	return e, true
}

func instanceID(id uint32) int {
	if id == noInstance {
		return -1
	}
	return int(id)
}

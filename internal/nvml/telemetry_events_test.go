package nvml

import (
	"context"
	"runtime"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// patience bounds every wait on the watch goroutine; it is never the
// expected duration of anything.
const patience = 20 * time.Second

// nextEvent receives one event, failing the test if none comes in time.
func nextEvent(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case e, open := <-events:
		require.True(t, open, "the channel closed before the event came")
		return e
	case <-time.After(patience):
		t.Fatalf("no event within %s", patience)
		return Event{}
	}
}

// requireClosed waits for the channel to close, draining it.
func requireClosed(t *testing.T, events <-chan Event) {
	t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case _, open := <-events:
			if !open {
				return
			}
		case <-deadline:
			t.Fatalf("the event channel did not close within %s", patience)
		}
	}
}

func TestWatchEventsDeliversNVMLEvents(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fleet := nvmltest.NewDGXA100()
	gpus := newTelemetry(t, fleet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := gpus.WatchEvents(ctx)
	require.NoError(t, err)

	tests := []struct {
		description string
		fire        func() int
		want        Event
	}{
		{
			description: "an XID of the whole GPU",
			fire:        func() int { return fleet.FireXID(3, 79) },
			want:        Event{Kind: EventXID, GPUIndex: 3, UUID: "GPU-00000000-0000-4000-8000-000000000003", XID: 79, GPUInstanceID: -1, ComputeInstanceID: -1},
		},
		{
			description: "an XID NVML ties to a MIG instance",
			fire: func() int {
				return fleet.FireEvent(6, gonvml.EventData{EventType: gonvml.EventTypeXidCriticalError, EventData: 31, GpuInstanceId: 2, ComputeInstanceId: 0})
			},
			want: Event{Kind: EventXID, GPUIndex: 6, UUID: "GPU-00000000-0000-4000-8000-000000000006", XID: 31, GPUInstanceID: 2, ComputeInstanceID: 0},
		},
		{
			description: "a double-bit ECC error",
			fire: func() int {
				return fleet.FireEvent(0, gonvml.EventData{EventType: gonvml.EventTypeDoubleBitEccError, GpuInstanceId: nvmltest.NoInstance, ComputeInstanceId: nvmltest.NoInstance})
			},
			want: Event{Kind: EventECCDoubleBit, GPUIndex: 0, UUID: "GPU-00000000-0000-4000-8000-000000000000", GPUInstanceID: -1, ComputeInstanceID: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, 1, tc.fire(), "the GPU is registered on the watch's event set")
			got := nextEvent(t, events)
			require.Equal(t, fleet.Now(), got.Time)
			got.Time = time.Time{}
			require.Equal(t, tc.want, got)
		})
	}
	require.Zero(t, fleet.FireEvent(1, gonvml.EventData{EventType: gonvml.EventTypePState}), "P-state changes are not watched")

	_, err = gpus.Sample(SampleOptions{})
	require.NoError(t, err, "Sample runs while the watch waits")

	cancel()
	requireClosed(t, events)
	require.Equal(t, uint64(1), fleet.Calls().ByMethod["EventSet.Free"], "the event set is freed")
	require.Zero(t, fleet.FireXID(3, 79), "nothing is registered any more")
	requireGoroutinesBackTo(t, goroutines)
}

// requireGoroutinesBackTo waits for the goroutine count to come back to n.
func requireGoroutinesBackTo(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchEventsEndsOnClose(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	gpus := New(Options{Lib: fleet.Server, SysfsRoot: t.TempDir(), Now: fleet.Now})
	events, err := gpus.WatchEvents(context.Background())
	require.NoError(t, err)
	require.NoError(t, gpus.Close())
	requireClosed(t, events)
	calls := fleet.Calls().ByMethod
	require.Equal(t, uint64(1), calls["EventSet.Free"])
	require.Equal(t, uint64(1), calls["Shutdown"], "NVML is shut down after the set is freed")
}

func TestWatchEventsRegistersWhatEachGPUSupports(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[2].SupportedEvents = 0                                    // offers no events
	fleet.GPUs[5].SupportedEvents = gonvml.EventTypeXidCriticalError     // XIDs only
	fleet.GPUs[7].SupportedEvents |= gonvml.EventTypeGpuUnavailableError // newer drivers add this
	fleet.Device(4).RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return {
		return gonvml.ERROR_NOT_SUPPORTED
	}
	fleet.GPUs[6].Lost = true
	gpus := newTelemetry(t, fleet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := gpus.WatchEvents(ctx)
	require.NoError(t, err, "GPUs that cannot be watched do not stop the others")

	require.Zero(t, fleet.FireXID(2, 13))
	require.Zero(t, fleet.FireXID(6, 13))
	require.Zero(t, fleet.FireEvent(5, gonvml.EventData{EventType: gonvml.EventTypeSingleBitEccError}))
	require.Equal(t, 1, fleet.FireEvent(7, gonvml.EventData{EventType: gonvml.EventTypeGpuUnavailableError, GpuInstanceId: nvmltest.NoInstance, ComputeInstanceId: nvmltest.NoInstance}))
	e := nextEvent(t, events)
	require.Equal(t, EventGPUUnavailable, e.Kind)
	require.Equal(t, 7, e.GPUIndex)
	require.Equal(t, 1, fleet.FireXID(5, 48))
	e = nextEvent(t, events)
	require.Equal(t, EventXID, e.Kind)
	require.Equal(t, 5, e.GPUIndex)
	require.Equal(t, uint64(48), e.XID)
}

func TestWatchEventsFails(t *testing.T) {
	t.Run("without a driver", func(t *testing.T) {
		gpus := New(Options{Lib: &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }}, SysfsRoot: t.TempDir()})
		_, err := gpus.WatchEvents(context.Background())
		require.ErrorIs(t, err, ErrNoDriver)
		require.ErrorContains(t, err, "kernel module missing")
	})
	t.Run("when no GPU can be watched", func(t *testing.T) {
		fleet := nvmltest.NewDGXA100()
		for _, g := range fleet.GPUs {
			g.SupportedEvents = gonvml.EventTypePState
		}
		gpus := newTelemetry(t, fleet)
		_, err := gpus.WatchEvents(context.Background())
		require.ErrorContains(t, err, "no GPU can be watched (GPU 0: offers no XID or ECC events;")
		require.Equal(t, uint64(1), fleet.Calls().ByMethod["EventSet.Free"], "the unused set is freed")
	})
	t.Run("when NVML offers no event set", func(t *testing.T) {
		fleet := nvmltest.NewDGXA100()
		fleet.Server.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
		gpus := newTelemetry(t, fleet)
		_, err := gpus.WatchEvents(context.Background())
		require.ErrorIs(t, err, gonvml.ERROR_NOT_SUPPORTED)
		require.ErrorContains(t, err, "creating an NVML event set")
	})
}

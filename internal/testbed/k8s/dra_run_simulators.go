package k8s

import (
	"context"
	"io"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// RunSimulators runs the simulators of NVIDIA's node agents side by side
// until ctx ends: the device-plugin simulator (RunDevicePluginSimulator)
// and the DRA driver simulator (RunDRADriverSimulator), so that one
// cluster can hand out GPUs both ways. In-process testbeds run it from
// Start; `gpu-testbed simulate` runs it for a detached one. The first
// error ends both.
func RunSimulators(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log = &lockedWriter{w: log}
	errs := make(chan error, 2)
	for _, run := range []func(context.Context, kubernetes.Interface, io.Writer) error{RunDevicePluginSimulator, RunDRADriverSimulator} {
		go func() { errs <- run(ctx, client, log) }()
	}
	first := <-errs
	cancel()
	if second := <-errs; first == nil {
		first = second
	}
	return first
}

// lockedWriter lets the two simulators share one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

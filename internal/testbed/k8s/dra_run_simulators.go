package k8s

import (
	"context"
	"io"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// RunSimulators runs the simulators of NVIDIA's node agents side by side
// until ctx ends: the device-plugin simulator (RunDevicePluginSimulator),
// the DRA driver simulator (RunDRADriverSimulator), so that one cluster
// can hand out GPUs both ways, and the health-agent simulator
// (RunHealthAgentSimulator), which runs gpu-bootstrap's health agent for
// its pods and plays GPU faults. In-process testbeds run it from Start;
// `gpu-testbed simulate` runs it for a detached one. The first error ends
// them all.
func RunSimulators(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log = &lockedWriter{w: log}
	simulators := []func(context.Context, kubernetes.Interface, io.Writer) error{RunDevicePluginSimulator, RunDRADriverSimulator, RunHealthAgentSimulator}
	errs := make(chan error, len(simulators))
	for _, run := range simulators {
		go func() { errs <- run(ctx, client, log) }()
	}
	first := <-errs
	cancel()
	for range len(simulators) - 1 {
		if err := <-errs; first == nil {
			first = err
		}
	}
	return first
}

// lockedWriter lets the simulators share one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

package testbed

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds a test testbed's start on a slow machine; it takes
// seconds on a fast one.
const startTimeout = 2 * time.Minute

// unavailable is why Main started no testbed, for SkipIfUnavailable.
var unavailable error

// Required reports whether tests must fail, not skip, when the testbed
// binaries are missing: in CI (CI set) or with GPU_TESTBED_REQUIRED=1.
func Required() bool {
	ci := os.Getenv("CI")
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("GPU_TESTBED_REQUIRED") == "1"
}

// Main is for TestMain: it starts a testbed, hands it to setup, runs the
// tests, and stops it, also on SIGINT or SIGTERM. With
// GPU_TESTBED_VERBOSE=1 and no opts.Log, the output of its processes goes
// to stderr.
//
// When a backend's binaries are missing it fails if Required, and
// otherwise runs the tests without a testbed (setup is not called): those
// that need one call SkipIfUnavailable first.
func Main(m *testing.M, opts Options, setup func(*Testbed)) int {
	if opts.Log == nil && os.Getenv("GPU_TESTBED_VERBOSE") == "1" {
		opts.Log = os.Stderr
	}

	// An interrupt aborts a start in progress, or stops every testbed of
	// this process (removing their directories) and exits.
	startCtx, cancelStart := context.WithTimeout(context.Background(), startTimeout)
	defer cancelStart()
	var started atomic.Bool
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		<-signals
		cancelStart()
		if started.Load() {
			stopAll()
			os.Exit(130)
		}
	}()

	startedAt := time.Now()
	tb, err := Start(startCtx, opts)
	if IsMissingBinaries(err) && !Required() {
		unavailable = err
		fmt.Fprintf(os.Stderr, "testbed: tests that need it will be skipped: %v\n", err)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed: starting: %v\n", err)
		return 1
	}
	started.Store(true)
	if startCtx.Err() != nil { // interrupted just as the start finished
		_ = tb.Stop()
		return 130
	}
	fmt.Fprintf(os.Stderr, "testbed: ready in %s in %s\n", time.Since(startedAt).Round(time.Millisecond), tb.Dir())

	if setup != nil {
		setup(tb)
	}
	code := m.Run()
	if err := tb.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// SkipIfUnavailable skips t when Main ran the tests without a testbed
// because its binaries are missing.
func SkipIfUnavailable(t testing.TB) {
	t.Helper()
	if unavailable != nil {
		t.Skipf("no testbed: %v", unavailable)
	}
}

// StartForTest starts a testbed for one test and stops it when the test
// ends. Missing binaries skip the test, or fail it when Required.
func StartForTest(t testing.TB, opts Options) *Testbed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tb, err := Start(ctx, opts)
	if IsMissingBinaries(err) && !Required() {
		t.Skipf("no testbed: %v", err)
	}
	if err != nil {
		t.Fatalf("starting the testbed: %v", err)
	}
	t.Cleanup(func() {
		if err := tb.Stop(); err != nil {
			t.Errorf("stopping the testbed: %v", err)
		}
	})
	return tb
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// scriptedTelemetry answers Sample with the samples it holds, in turn (the
// last one again once they run out), for the monitor's cases NVML's double
// cannot stage: WatchEvents failing, a sample failing, a driver with no GPU.
type scriptedTelemetry struct {
	mu       sync.Mutex
	samples  []nvml.TelemetrySample
	calls    int
	failFrom int // Sample fails from this call on (1-based); 0: never
	watchErr error
	sampled  chan int // receives each call's number when not nil
}

func (s *scriptedTelemetry) Sample(opts nvml.SampleOptions) (nvml.TelemetrySample, error) {
	s.mu.Lock()
	s.calls++
	call := s.calls
	var out nvml.TelemetrySample
	if s.failFrom == 0 || call < s.failFrom {
		out = s.samples[min(call, len(s.samples))-1]
	}
	s.mu.Unlock()
	if s.sampled != nil {
		s.sampled <- call
	}
	if s.failFrom != 0 && call >= s.failFrom {
		return out, errors.New("NVML: ERROR_UNKNOWN")
	}
	if len(opts.Indices) > 0 {
		var gpus []nvml.GPUSample
		for _, g := range out.GPUs {
			for _, i := range opts.Indices {
				if g.Index == i {
					gpus = append(gpus, g)
				}
			}
		}
		out.GPUs = gpus
	}
	return out, nil
}

func (s *scriptedTelemetry) WatchEvents(ctx context.Context) (<-chan nvml.Event, error) {
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	events := make(chan nvml.Event)
	go func() { <-ctx.Done(); close(events) }()
	return events, nil
}

func (s *scriptedTelemetry) Close() error { return nil }

func twoGPUs() nvml.TelemetrySample {
	util := uint32(30)
	return nvml.TelemetrySample{
		Driver: nvml.Driver{Loaded: true, Version: "550.54.15", CUDAVersion: "12.4"},
		GPUs: []nvml.GPUSample{
			{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:07:00.0", UtilizationGPU: &util},
			{Index: 1, UUID: "GPU-bbbb", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:0f:00.0", UtilizationGPU: &util},
		},
	}
}

// scriptedEnv is testEnv with its Telemetry replaced by tel.
func scriptedEnv(tel nvml.Telemetry) (environment, *bytes.Buffer, *bytes.Buffer) {
	env, stdout, stderr, _ := testEnv(nil, nil)
	env.openTelemetry = func(string) nvml.Telemetry { return tel }
	return env, stdout, stderr
}

func TestMonitorRefusesBadFlagsNamingThem(t *testing.T) {
	tests := []struct {
		description string
		args        []string
		want        string
	}{
		{"an unknown format", []string{"--format", "xml"}, `--format "xml": use table, csv`},
		{"an unknown csv option", []string{"--format", "csv,nosuch"}, `--format "csv,nosuch"`},
		{"a zero interval", []string{"--interval", "0s"}, "--interval 0s: a duration above 0"},
		{"a negative count", []string{"--count", "-1"}, "--count -1: 0 (no limit) or more"},
		{"a negative duration", []string{"--duration", "-1m"}, "--duration -1m0s: 0 (no limit) or more"},
		{"an index that is not there", []string{"--gpus", "0,7"}, `--gpus: no GPU "7" on this machine; it has 0 (GPU-aaaa), 1 (GPU-bbbb)`},
		{"a UUID that is not there", []string{"--gpus", "GPU-cccc"}, `--gpus: no GPU "GPU-cccc" on this machine; it has 0 (GPU-aaaa), 1 (GPU-bbbb)`},
		{"an argument", []string{"now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{twoGPUs()}}
			env, stdout, stderr := scriptedEnv(tel)
			if code := runIn(env, append([]string{"monitor", "--count", "1"}, tt.args...)...); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("a usage error printed on stdout: %q", stdout.String())
			}
		})
	}
}

func TestMonitorWithADriverButNoGPUFails(t *testing.T) {
	tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{{Driver: nvml.Driver{Loaded: true, Version: "550.54.15"}}}}
	env, stdout, stderr := scriptedEnv(tel)
	if code := runIn(env, "monitor", "--count", "3", "--format", "csv"); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if want := "the NVIDIA driver 550.54.15 is loaded but reports no GPU: nothing to monitor"; !strings.Contains(stderr.String(), want) || stdout.Len() != 0 {
		t.Errorf("stderr %q lacks %q (stdout %q)", stderr.String(), want, stdout.String())
	}
}

func TestMonitorSamplesOnWhenEventsAreUnavailable(t *testing.T) {
	tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{twoGPUs()}, watchErr: errors.New("NVML: ERROR_NOT_SUPPORTED")}
	env, stdout, stderr := scriptedEnv(tel)
	if code := runIn(env, "monitor", "--count", "3", "--interval", "1ms", "--format", "json"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stderr.String(), "events unavailable (NVML: ERROR_NOT_SUPPORTED); sampling goes on"); n != 1 {
		t.Errorf("stderr says events are unavailable %d times, want once:\n%s", n, stderr)
	}
	if n := strings.Count(stdout.String(), `{"type":"sample"`); n != 3 || tel.calls != 3 {
		t.Errorf("%d sample lines from %d Sample calls, want 3 and 3:\n%s", n, tel.calls, stdout)
	}
}

func TestMonitorStopsWhenASampleFails(t *testing.T) {
	tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{twoGPUs()}, failFrom: 3}
	env, stdout, stderr := scriptedEnv(tel)
	if code := runIn(env, "monitor", "--interval", "1ms"); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "reading the GPUs: NVML: ERROR_UNKNOWN") {
		t.Errorf("stderr does not name the failure: %q", stderr)
	}
	if !strings.Contains(stdout.String(), "Summary: 2 samples") {
		t.Errorf("no summary of the two samples taken:\n%s", stdout)
	}
}

func TestMonitorPrintsTheSummaryWhenInterrupted(t *testing.T) {
	sampled := make(chan int)
	tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{twoGPUs()}, sampled: sampled}
	env, stdout, stderr := scriptedEnv(tel)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"monitor", "--gpus", "GPU-bbbb", "--interval", "1ms", "--format", "json"}, env)
	}()
	for call := range sampled {
		if call == 4 {
			interrupt()
			break
		}
	}
	go func() {
		for range sampled { // a sample already under way when ctx ended
		}
	}()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after an interrupt, want 0\n%s", code, stderr)
	}
	close(sampled)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var last struct {
		Type    string `json:"type"`
		Samples int    `json:"samples"`
		GPUs    []struct {
			Index int `json:"index"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "summary" {
		t.Fatalf("the last line is not a summary (%v): %q", err, lines[len(lines)-1])
	}
	if last.Samples < 4 || len(last.GPUs) != 1 || last.GPUs[0].Index != 1 {
		t.Errorf("summary of %d samples over GPUs %+v; want at least 4 samples of GPU 1 alone", last.Samples, last.GPUs)
	}
}

func TestMonitorStopsAfterItsDuration(t *testing.T) {
	tel := &scriptedTelemetry{samples: []nvml.TelemetrySample{twoGPUs()}}
	env, stdout, stderr := scriptedEnv(tel)
	if code := runIn(env, "monitor", "--duration", "20ms", "--interval", "1ms", "--format", "csv,noheader"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "Summary: ") || strings.HasPrefix(stdout.String(), "timestamp") {
		t.Errorf("csv,noheader: stdout must start with data and the summary go to stderr\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestMonitorLiveViewRedrawsInPlace(t *testing.T) {
	var screen bytes.Buffer
	live := &liveOutput{w: &screen, interval: time.Second}
	s := twoGPUs()
	s.Time = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	live.sample(s, nil)
	live.event(nvml.Event{Time: s.Time, Kind: nvml.EventXID, GPUIndex: 1, XID: 79, Detail: "the GPU has fallen off the bus", GPUInstanceID: -1})
	frames := strings.Split(screen.String(), "\x1b[H\x1b[2J")
	if len(frames) != 3 || frames[0] != "" {
		t.Fatalf("want two frames, each after a cursor-home and clear-screen: %q", screen.String())
	}
	for _, want := range []string{"gpu-bootstrap monitor: every 1s; Ctrl-C stops and prints a summary", "NVIDIA H100 80GB HBM3", "30 %"} {
		if !strings.Contains(frames[1], want) {
			t.Errorf("first frame lacks %q:\n%s", want, frames[1])
		}
	}
	if !strings.Contains(frames[2], "Recent events:\n  2026/11/26 08:00:00.000 GPU 1 XID 79: the GPU has fallen off the bus") {
		t.Errorf("an event does not redraw the frame with it:\n%s", frames[2])
	}
}

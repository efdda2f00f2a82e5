package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
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

// The tests below run the monitor against the real NVML layer: the
// DGX A100 double, or no driver at all.

func TestMonitorWithoutADriverSaysSoAndFails(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nil, nil)
	if code := runIn(env, "monitor", "--count", "3", "--format", "csv", "--sysfs", t.TempDir()); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "gpu-bootstrap monitor: no NVIDIA driver loaded") || !strings.Contains(stderr.String(), "nothing to monitor") {
		t.Errorf("stderr does not say the driver is missing: %q", stderr)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout is not empty: %q", stdout)
	}
}

// nvidiaSMIColumns are the columns nvidia-smi --query-gpu prints under
// these names with --format=csv.
var nvidiaSMIColumns = []string{
	"timestamp", "index", "uuid", "name", "pci.bus_id", "utilization.gpu [%]", "utilization.memory [%]",
	"memory.total [MiB]", "memory.used [MiB]", "memory.free [MiB]", "temperature.gpu", "temperature.memory",
	"power.draw [W]", "power.limit [W]", "clocks.current.sm [MHz]", "clocks.current.memory [MHz]",
	"clocks.current.graphics [MHz]", "clocks_event_reasons.active",
	"ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
}

// readCSV parses CSV as a script reading nvidia-smi's does: encoding/csv
// with the space after each comma trimmed, rows keyed by header name.
func readCSV(t *testing.T, text string) (header []string, rows []map[string]string) {
	t.Helper()
	r := csv.NewReader(strings.NewReader(text))
	r.TrimLeadingSpace = true
	records, err := r.ReadAll()
	if err != nil || len(records) == 0 {
		t.Fatalf("stdout is not CSV (%v):\n%s", err, text)
	}
	for _, record := range records[1:] {
		row := map[string]string{}
		for i, name := range records[0] {
			row[name] = record[i]
		}
		rows = append(rows, row)
	}
	return records[0], rows
}

func TestMonitorCSVReadsAsNvidiaSMIs(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[2].UtilizationGPU = 87
	env, stdout, stderr, _ := testEnv(fleet, nil)
	if code := runIn(env, "monitor", "--count", "2", "--interval", "1ms", "--format", "csv", "--gpus", "0,GPU-00000000-0000-4000-8000-000000000002"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	header, rows := readCSV(t, stdout.String())
	if strings.Join(header, "|") != strings.Join(nvidiaSMIColumns, "|") {
		t.Errorf("header:\n%q\nwant nvidia-smi's:\n%q", header, nvidiaSMIColumns)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 samples of 2 GPUs:\n%s", len(rows), stdout)
	}
	gpu2 := rows[1]
	for name, want := range map[string]string{
		"timestamp":                     "2026/11/22 08:00:00.000",
		"index":                         "2",
		"uuid":                          "GPU-00000000-0000-4000-8000-000000000002",
		"pci.bus_id":                    "00000000:47:00.0",
		"utilization.gpu [%]":           "87 %",
		"memory.total [MiB]":            "40960 MiB",
		"temperature.gpu":               "31",
		"power.draw [W]":                "61.00 W",
		"power.limit [W]":               "400.00 W",
		"clocks.current.sm [MHz]":       "1410 MHz",
		"clocks.current.memory [MHz]":   "1215 MHz",
		"clocks.current.graphics [MHz]": "1410 MHz",
	} {
		if gpu2[name] != want {
			t.Errorf("GPU 2 %s = %q, want %q", name, gpu2[name], want)
		}
	}
	if rows[0]["index"] != "0" || rows[2]["index"] != "0" || rows[3]["index"] != "2" {
		t.Errorf("rows are not GPU 0 then GPU 2 per sample: %v", rows)
	}
	if !strings.Contains(stderr.String(), "Summary: 2 samples") {
		t.Errorf("the summary is not on stderr:\n%s", stderr)
	}
}

func TestMonitorJSONLines(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	if code := runIn(env, "monitor", "--count", "3", "--interval", "1ms", "--format", "json"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	var types []string
	for _, line := range lines {
		var v struct {
			Type string            `json:"type"`
			GPUs []json.RawMessage `json:"gpus"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line is not a JSON object (%v): %q", err, line)
		}
		types = append(types, v.Type)
		if len(v.GPUs) != 8 {
			t.Errorf("%s line with %d GPUs, want 8", v.Type, len(v.GPUs))
		}
	}
	if strings.Join(types, ",") != "sample,sample,sample,summary" {
		t.Errorf("line types %v, want three samples and the summary", types)
	}
	var first struct {
		nvml.TelemetrySample
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Driver.Version != "550.54.15" || first.GPUs[7].UUID != "GPU-00000000-0000-4000-8000-000000000007" {
		t.Errorf("first sample (%v): driver %+v", err, first.Driver)
	}
}

func TestMonitorLinesWhenStdoutIsNotATerminal(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	if code := runIn(env, "monitor", "--count", "2", "--interval", "1ms", "--gpus", "3"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	out := stdout.String()
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("escape codes in output to a non-terminal: %q", out)
	}
	if n := strings.Count(out, "2026/11/22 08:00:00.000 GPU 3 "); n != 2 || strings.Contains(out, "GPU 0 ") {
		t.Errorf("want one line for GPU 3 per sample and nothing of other GPUs:\n%s", out)
	}
}

func TestMonitorShowsMIGDevicesUnderTheirGPU(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	d := fleet.Device(0)
	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	const mib = 1 << 20
	d.MemoryInfo = gonvml.Memory{Total: 40960 * mib, Used: 5100 * mib, Free: 35860 * mib} // the MIG device's 5000 MiB and the GPU's own
	migDevice := &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return 0, gonvml.SUCCESS },
		GetUUIDFunc:              func() (string, gonvml.Return) { return "MIG-11111111-1111-1111-1111-111111111111", gonvml.SUCCESS },
		GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
			return gonvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 3, MemorySizeMB: 19968}, gonvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: 19968 * mib, Used: 5000 * mib, Free: 14968 * mib}, gonvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 4800 * mib}}, gonvml.SUCCESS
		},
	}
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 0 {
			return migDevice, gonvml.SUCCESS
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	env, stdout, stderr, _ := testEnv(fleet, nil)
	if code := runIn(env, "monitor", "--count", "1", "--gpus", "0,1"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(stdout.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], " GPU 0 ") || !strings.Contains(lines[2], " GPU 1 ") {
		t.Fatalf("want GPU 0, its MIG device, then GPU 1:\n%s", stdout)
	}
	if want := "2026/11/22 08:00:00.000 GPU 0 MIG 3g.20gb (GI 1 CI 0): util n/a (MIG), memory 5000 / 19968 MiB, procs 1"; lines[1] != want {
		t.Errorf("MIG line:\n got %q\nwant %q", lines[1], want)
	}
	if !strings.Contains(stdout.String(), "  GPU 0: 5100 MiB of 40960 MiB at 08:00:00, most held by pid 4242 with 4800 MiB") {
		t.Errorf("the summary's peak memory does not name the process on the MIG device:\n%s", stdout)
	}
	if !strings.Contains(stdout.String(), "(whole GPU)") {
		t.Errorf("the summary does not say a MIG GPU's utilization is the whole GPU's:\n%s", stdout)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// withFreeMemory gives every GPU of the double 40 GiB with freeMiB[i] free.
func withFreeMemory(fleet *nvmltest.Fleet, freeMiB ...uint64) {
	const total = 40960 << 20
	for i := range fleet.Server.Devices {
		free := uint64(40000)
		if i < len(freeMiB) {
			free = freeMiB[i]
		}
		fleet.Device(i).MemoryInfo = gonvml.Memory{Total: total, Free: free << 20, Used: total - free<<20}
	}
}

func TestSelectPrintsTheChosenGPUsForDocker(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	withFreeMemory(fleet, 1000, 1000) // GPUs 0 and 1 are nearly full
	env, stdout, stderr, _ := testEnv(fleet, nil)
	if code := runIn(env, "select", "--count", "2", "--min-free-memory", "20GiB", "--window", "0", "--sysfs", t.TempDir()); code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	// GPUs 2 and 3 share a PCIe switch on a DGX A100 without NVLink in the
	// double, so they beat 2 and 4 (same socket) and anything across sockets.
	want := `"device=GPU-00000000-0000-4000-8000-000000000002,GPU-00000000-0000-4000-8000-000000000003"` + "\n"
	if stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr.String(), "chose GPU 2") || !strings.Contains(stderr.String(), "slowest link PXB") {
		t.Errorf("stderr does not explain the choice:\n%s", stderr)
	}
}

func TestSelectFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		want   string
	}{
		{"docker", "device=GPU-00000000-0000-4000-8000-000000000000\n"},
		{"env", "NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-4000-8000-000000000000\n"},
		{"compose", "device_ids: [\"GPU-00000000-0000-4000-8000-000000000000\"]\n"},
	} {
		fleet := nvmltest.NewDGXA100()
		withFreeMemory(fleet)
		env, stdout, stderr, _ := testEnv(fleet, nil)
		if code := runIn(env, "select", "--format", tc.format, "--window", "0", "--sysfs", t.TempDir()); code != exitOK || stdout.String() != tc.want {
			t.Errorf("--format %s: exit %d, stdout %q, want %q; stderr %s", tc.format, code, stdout, tc.want, stderr)
		}
	}
	fleet := nvmltest.NewDGXA100()
	withFreeMemory(fleet)
	env, stdout, _, _ := testEnv(fleet, nil)
	if code := runIn(env, "select", "--format", "json", "--count", "3", "--window", "0", "--sysfs", t.TempDir()); code != exitOK {
		t.Fatalf("--format json: exit %d", code)
	}
	var choice struct {
		GPUs []struct {
			Index int    `json:"index"`
			UUID  string `json:"uuid"`
		} `json:"gpus"`
		Link string `json:"link"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &choice); err != nil || len(choice.GPUs) != 3 || choice.Link != "NODE" {
		t.Errorf("json choice %+v (%v) from %s", choice, err, stdout)
	}
}

func TestSelectExcludesBusyGPUs(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	withFreeMemory(fleet)
	fleet.GPUs[0].Processes = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1 << 30}}
	fleet.GPUs[1].UtilizationGPU = 55
	env, stdout, stderr, _ := testEnv(fleet, nil)
	if code := runIn(env, "select", "--exclude-busy", "--window", "0", "--sysfs", t.TempDir()); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "device=GPU-00000000-0000-4000-8000-000000000002\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
}

func TestSelectFailsWithTheReasonForEachGPU(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	withFreeMemory(fleet, 1000, 1000, 1000, 1000, 1000, 1000, 30000, 1000)
	env, stdout, stderr, _ := testEnv(fleet, nil)
	code := runIn(env, "select", "--count", "2", "--min-free-memory", "20GiB", "--product", "A100", "--window", "0", "--sysfs", t.TempDir())
	if code != exitError {
		t.Fatalf("exit %d, want %d; stdout %q", code, exitError, stdout)
	}
	if stdout.Len() != 0 {
		t.Errorf("a failed choice printed %q on stdout", stdout)
	}
	for _, want := range []string{
		"only 1 of the 8 qualify (GPU 6)",
		"GPU 0 (GPU-00000000-0000-4000-8000-000000000000): 1000 MiB free of 40.0 GiB, needs 20.0 GiB",
		"GPU 7 (",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestSelectRefusesBadFlagsNamingThem(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-free-memory", "20G"}, "--min-free-memory"},
		{[]string{"--count", "0"}, "--count 0"},
		{[]string{"--prefer", "spread"}, `--prefer "spread"`},
		{[]string{"--format", "yaml"}, `--format "yaml"`},
		{[]string{"--window", "-1s"}, "--window -1s"},
		{[]string{"--busy-utilization", "150"}, "--busy-utilization"},
	} {
		fleet := nvmltest.NewDGXA100()
		env, _, stderr, _ := testEnv(fleet, nil)
		if code := runIn(env, append([]string{"select"}, tc.args...)...); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("select %v: exit %d, stderr %q; want %d naming %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

func TestSelectWithoutDriverSaysSo(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nil, nil)
	if code := runIn(env, "select", "--window", "0", "--sysfs", t.TempDir()); code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "no NVIDIA driver loaded") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

func TestSelectPrefersAnNVLinkPair(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	withFreeMemory(fleet)
	fleet.ConnectNVLink(5, 6, 12)
	env, stdout, stderr, _ := testEnv(fleet, nil)
	if code := runIn(env, "select", "--count", "2", "--window", "0", "--sysfs", t.TempDir()); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `"device=GPU-00000000-0000-4000-8000-000000000005,GPU-00000000-0000-4000-8000-000000000006"` + "\n"
	if stdout.String() != want {
		t.Fatalf("stdout %q, want the NVLink pair %q", stdout, want)
	}
	if !strings.Contains(stderr.String(), "slowest link NV12") {
		t.Errorf("stderr does not name the NVLink:\n%s", stderr)
	}
}

// TestSelectJudgesUtilizationOverTheWindow scripts GPU 0 idle at the first
// reading and saturated during the window: an instant reading takes it, a
// windowed one leaves it out as busy.
func TestSelectJudgesUtilizationOverTheWindow(t *testing.T) {
	newFleet := func() *nvmltest.Fleet {
		fleet := nvmltest.NewDGXA100()
		idle := nvmltest.Step{UtilizationSamples: []uint32{0, 0, 0}, SMClockMHz: 1410, MemoryClockMHz: 1215}
		saturated := idle
		saturated.UtilizationSamples = []uint32{100, 100, 95}
		fleet.Script(0, idle, saturated)
		for i := 1; i < 8; i++ {
			fleet.Script(i, idle, idle)
		}
		return fleet
	}
	for _, tc := range []struct {
		window string
		want   string
	}{
		{"0", "device=GPU-00000000-0000-4000-8000-000000000000\n"},
		{"1ms", "device=GPU-00000000-0000-4000-8000-000000000001\n"},
	} {
		env, stdout, stderr := steppingEnv(newFleet(), nil)
		if code := runIn(env, "select", "--exclude-busy", "--window", tc.window, "--sysfs", t.TempDir()); code != exitOK {
			t.Fatalf("--window %s: exit %d: %s", tc.window, code, stderr)
		}
		if stdout.String() != tc.want {
			t.Errorf("--window %s: stdout %q, want %q (stderr %s)", tc.window, stdout, tc.want, stderr)
		}
	}
}

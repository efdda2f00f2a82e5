package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// testEnv runs the commands against a mocked DGX A100 (fleet) or, when fleet
// is nil, against the real go-nvml pointed at a library that does not exist —
// the code path of a machine without the NVIDIA driver.
func testEnv(fleet *nvmltest.Fleet, vars map[string]string) (environment, *bytes.Buffer, *bytes.Buffer, *bootstrap.RecordingRunner) {
	var stdout, stderr bytes.Buffer
	runner := &bootstrap.RecordingRunner{}
	openNVML := func(sysfsRoot string) *nvml.GPUs {
		lib := gonvml.New(gonvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
		if fleet != nil {
			lib = fleet.Server
		}
		return nvml.New(nvml.Options{Lib: lib, SysfsRoot: sysfsRoot})
	}
	env := environment{
		stdout:        &stdout,
		stderr:        &stderr,
		getenv:        func(key string) string { return vars[key] },
		now:           func() time.Time { return time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC) },
		openGPUs:      func(sysfsRoot string) nvml.Library { return openNVML(sysfsRoot) },
		openTelemetry: func(sysfsRoot string) nvml.Telemetry { return openNVML(sysfsRoot) },
		runner:        runner,
	}
	return env, &stdout, &stderr, runner
}

func runIn(env environment, args ...string) int {
	return run(context.Background(), args, env)
}

// addPCIDevice puts an NVIDIA PCI function into a fake sysfs.
func addPCIDevice(t *testing.T, sysfs, address, device, driver string) {
	t.Helper()
	dir := filepath.Join(sysfs, "bus/pci/devices", address)
	must(t, os.MkdirAll(dir, 0o755))
	for name, value := range map[string]string{"vendor": "0x10de", "device": "0x" + device, "class": "0x030200", "numa_node": "0"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(value+"\n"), 0o644))
	}
	if driver != "" {
		driverDir := filepath.Join(sysfs, "bus/pci/drivers", driver)
		must(t, os.MkdirAll(driverDir, 0o755))
		must(t, os.Symlink(driverDir, filepath.Join(dir, "driver")))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestVersionAndUsage(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nil, nil)
	if code := runIn(env, "version"); code != exitOK || !strings.HasPrefix(stdout.String(), "gpu-bootstrap ") {
		t.Errorf("version: exit %d, %q", code, stdout.String())
	}
	for _, args := range [][]string{{}, {"frobnicate"}, {"plan", "--no-such-flag"}, {"inventory", "extra"}} {
		stderr.Reset()
		if code := runIn(env, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, stderr.String())
		}
	}
	stderr.Reset()
	if code := runIn(env, "plan", "--root", t.TempDir()); code != exitUsage || !strings.Contains(stderr.String(), "nothing to do") {
		t.Errorf("plan without a desired state: exit %d, stderr %q", code, stderr.String())
	}
}

func TestInventoryOfADGXA100(t *testing.T) {
	env, stdout, _, _ := testEnv(nvmltest.NewDGXA100(), nil)
	sysfs := t.TempDir()
	if code := runIn(env, "inventory", "--json", "--sysfs", sysfs); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var snap nvml.Snapshot
	if err := json.Unmarshal(stdout.Bytes(), &snap); err != nil {
		t.Fatalf("inventory --json is not a snapshot: %v\n%s", err, stdout.String())
	}
	if !snap.Driver.Loaded || snap.Driver.Version != "550.54.15" || len(snap.Devices) != 8 {
		t.Fatalf("snapshot: driver %+v, %d devices", snap.Driver, len(snap.Devices))
	}
	if snap.Devices[7].UUID != "GPU-00000000-0000-4000-8000-000000000007" || snap.Devices[7].Memory.TotalMiB != 40960 {
		t.Errorf("device 7 = %+v", snap.Devices[7])
	}

	stdout.Reset()
	if code := runIn(env, "inventory", "--sysfs", sysfs); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	table := stdout.String()
	if !strings.Contains(table, "Driver: 550.54.15 (CUDA 12.4)") || strings.Count(table, "A100-SXM4-40GB") != 8 {
		t.Errorf("table:\n%s", table)
	}
}

func TestWithoutADriverOrAGPU(t *testing.T) {
	sysfs := t.TempDir()
	env, stdout, _, _ := testEnv(nil, nil)
	if code := runIn(env, "inventory", "--sysfs", sysfs); code != exitOK {
		t.Errorf("inventory: exit %d", code)
	}
	for _, want := range []string{"no NVIDIA driver loaded", "this machine has no NVIDIA GPU"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("inventory output lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, visible := range []string{"", "void"} {
		env, stdout, _, _ := testEnv(nil, map[string]string{"NVIDIA_VISIBLE_DEVICES": visible})
		if code := runIn(env, "check", "--sysfs", sysfs, "--root", t.TempDir()); code != exitOK {
			t.Errorf("check with NVIDIA_VISIBLE_DEVICES=%q: exit %d, want 0 (CPU only)\n%s", visible, code, stdout.String())
		}
		if !strings.Contains(stdout.String(), bootstrap.HealthCPUOnly) {
			t.Errorf("check with NVIDIA_VISIBLE_DEVICES=%q does not say CPU only:\n%s", visible, stdout.String())
		}
	}
}

func TestGPUsWithoutADriverAreUnhealthy(t *testing.T) {
	sysfs := t.TempDir()
	addPCIDevice(t, sysfs, "0000:65:00.0", "2236", "")
	addPCIDevice(t, sysfs, "0000:66:00.0", "2236", "vfio-pci")
	env, stdout, _, _ := testEnv(nil, nil)
	if code := runIn(env, "inventory", "--sysfs", sysfs); code != exitOK {
		t.Errorf("inventory: exit %d", code)
	}
	for _, want := range []string{"NVIDIA PCI devices: 2", "0000:65:00.0", "no driver bound", "vfio-pci"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("inventory output lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	// --root: a bare node, whatever this test machine is (a container's
	// /.dockerenv would make it CPU only).
	if code := runIn(env, "check", "--sysfs", sysfs, "--root", t.TempDir()); code != 1 {
		t.Errorf("check: exit %d, want 1 (GPUs present, no driver)\n%s", code, stdout.String())
	}
	if !strings.Contains(stdout.String(), "no NVIDIA driver loaded") {
		t.Errorf("check does not name the missing driver:\n%s", stdout.String())
	}
}

const nodeConfig = `
persistence: true
runtime:
  engine: containerd
  set_as_default: true
verify:
  expect_gpus: 8
`

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpu-bootstrap.yaml")
	must(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestPlanApplyPlan(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	env, stdout, stderr, runner := testEnv(fleet, nil)
	root := t.TempDir()
	// The NVIDIA Container Toolkit is installed: the runtime step refuses
	// to point containerd at a runtime binary that is not there.
	runtimeBinary := filepath.Join(root, "usr/bin/nvidia-container-runtime")
	must(t, os.MkdirAll(filepath.Dir(runtimeBinary), 0o755))
	must(t, os.WriteFile(runtimeBinary, []byte("#!/bin/sh\n"), 0o755))
	config := writeConfig(t, nodeConfig)
	args := func(cmd string, extra ...string) []string {
		return append([]string{cmd, "--config", config, "--root", root}, extra...)
	}

	if code := runIn(env, args("plan")...); code != exitChanges {
		t.Fatalf("first plan: exit %d, want %d\n%s%s", code, exitChanges, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "persistence") || !strings.Contains(stdout.String(), "/etc/containerd/config.toml") {
		t.Errorf("plan does not show the persistence and containerd changes:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(root, "etc")); !os.IsNotExist(err) {
		t.Errorf("plan wrote under the root (err %v)", err)
	}

	stdout.Reset()
	if code := runIn(env, args("plan", "--json")...); code != exitChanges {
		t.Fatalf("plan --json: exit %d, want %d\n%s%s", code, exitChanges, stdout, stderr)
	}
	var planJSON bootstrap.PlanJSON
	if err := json.Unmarshal(stdout.Bytes(), &planJSON); err != nil {
		t.Fatalf("plan --json is not a plan: %v\n%s", err, stdout)
	}
	if planJSON.Changes == 0 || !planHasFile(planJSON, "/etc/containerd/config.toml", "containerd") {
		t.Errorf("plan --json lacks the containerd change (with restart): %+v", planJSON)
	}

	stdout.Reset()
	if code := runIn(env, args("apply")...); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	for i, gpu := range fleet.GPUs {
		if !gpu.Persistence {
			t.Errorf("GPU %d: persistence mode still off after apply", i)
		}
	}
	if !strings.Contains(stdout.String(), "health: healthy") {
		t.Errorf("apply did not end healthy:\n%s", stdout)
	}
	ran := strings.Join(runner.Lines(), "\n")
	if strings.Contains(ran, "systemctl restart") {
		t.Errorf("apply restarted a service without --restart-runtime: %s", ran)
	}

	stdout.Reset()
	if code := runIn(env, args("plan")...); code != exitOK {
		t.Fatalf("plan after apply: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
	stdout.Reset()
	before := snapshotTree(t, root)
	if code := runIn(env, args("apply")...); code != exitOK || !strings.Contains(stdout.String(), "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if after := snapshotTree(t, root); after != before {
		t.Errorf("the second apply changed files under the root:\nbefore %s\nafter  %s", before, after)
	}
}

func TestInvalidConfigChangesNothing(t *testing.T) {
	env, stdout, stderr, runner := testEnv(nvmltest.NewDGXA100(), nil)
	root := t.TempDir()
	config := writeConfig(t, "runtime:\n  engine: podman\n")
	if code := runIn(env, "apply", "--config", config, "--root", root); code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "runtime.engine") || !strings.Contains(stderr.String(), "nothing was changed") {
		t.Errorf("error does not name runtime.engine or say nothing changed: %q", stderr.String())
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 || len(runner.Calls) != 0 || stdout.Len() != 0 {
		t.Errorf("an invalid config touched the host: %d entries, commands %v, output %q", len(entries), runner.Lines(), stdout.String())
	}
}

// snapshotTree is every file under root with its content, for comparing
// before and after.
func snapshotTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		b.WriteString(rel + "=" + string(data) + ";")
		return nil
	})
	must(t, err)
	return b.String()
}

// TestApplyOfANewDriverBranchAsksForAReboot replaces the running 550 driver
// of the mocked DGX A100 with branch 570 on Ubuntu: apply installs it, says a
// reboot is needed and skips the health check, which could only fail (550
// stays loaded until the reboot).
func TestApplyOfANewDriverBranchAsksForAReboot(t *testing.T) {
	env, stdout, stderr, runner := testEnv(nvmltest.NewDGXA100(), nil)
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("NAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nID=ubuntu\nID_LIKE=debian\n"), 0o644))
	config := writeConfig(t, "driver:\n  branch: \"570\"\n")
	// Ubuntu's archive offers the branch (the plan checks after apt-get update).
	runner.Reply("apt-cache madison nvidia-headless-570-server-open", bootstrap.Output{Stdout: []byte(" nvidia-headless-570-server-open | 570.195.03-0ubuntu0.24.04.1 | http://archive.ubuntu.com/ubuntu noble-updates/restricted amd64 Packages\n")})

	if code := runIn(env, "apply", "--config", config, "--root", root); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "Reboot required") || strings.Contains(stdout.String(), "health:") {
		t.Errorf("apply should ask for a reboot and skip the health check:\n%s", stdout)
	}
	if !strings.Contains(stdout.String(), "driver: warning: driver 550.54.15 is running but no driver package of Ubuntu's archive is installed") {
		t.Errorf("apply should warn that the mock's 550 is held by no package:\n%s", stdout)
	}
	if ran := strings.Join(runner.Lines(), "\n"); !strings.Contains(ran, "apt-get install -y nvidia-headless-570-server-open") {
		t.Errorf("apply did not install branch 570:\n%s", ran)
	}
}

func planHasFile(plan bootstrap.PlanJSON, path, restart string) bool {
	for _, step := range plan.Steps {
		for _, change := range step.Changes {
			if change.File == path && change.Restart == restart && strings.Contains(change.Diff, "+++ "+path) {
				return true
			}
		}
	}
	return false
}

// TestInventoryTableGolden pins the table a person reads on a DGX A100
// (regenerate with -update after a deliberate change).
func TestInventoryTableGolden(t *testing.T) {
	env, stdout, _, _ := testEnv(nvmltest.NewDGXA100(), nil)
	if code := runIn(env, "inventory", "--sysfs", t.TempDir()); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	golden := filepath.Join("testdata", "inventory-dgxa100.txt")
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(golden, stdout.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if stdout.String() != string(want) {
		t.Errorf("inventory table differs from %s (go test -run TestInventoryTableGolden -update):\n%s", golden, stdout)
	}
}

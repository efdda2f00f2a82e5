package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryOnThisMachine builds gpu-bootstrap and runs it as a user would,
// with the real go-nvml and this machine's sysfs: on a machine without the
// NVIDIA driver (CI) inventory and check must say so and exit with the
// documented codes; on a machine with one, inventory must list its GPUs.
func TestBinaryOnThisMachine(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gpu-bootstrap")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no NVIDIA_VISIBLE_DEVICES
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return string(out), 0
	}

	out, code := run("version")
	if code != 0 || !strings.HasPrefix(out, "gpu-bootstrap ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	out, code = run("inventory")
	if code != 0 {
		t.Fatalf("inventory: exit %d\n%s", code, out)
	}
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		if !strings.Contains(out, "Driver: ") || strings.Contains(out, "no NVIDIA driver loaded") {
			t.Errorf("this machine has /dev/nvidiactl, but inventory did not list a driver:\n%s", out)
		}
		return
	}
	if !strings.Contains(out, "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)") {
		t.Errorf("inventory on a machine without the driver does not say so:\n%s", out)
	}
	if !strings.Contains(out, "NVIDIA PCI devices:") {
		t.Errorf("inventory does not report what the PCI bus shows:\n%s", out)
	}

	// check on an empty root (a bare machine, not a container) and this
	// machine's sysfs: CPU only when the bus has no NVIDIA GPU, unhealthy
	// when it has GPUs without a driver.
	out, code = run("check", "--root", t.TempDir(), "--sysfs", "/sys")
	noGPUOnBus := strings.Contains(out, "no NVIDIA PCI device found")
	switch {
	case noGPUOnBus && (code != 0 || !strings.Contains(out, "health: cpu-only")):
		t.Errorf("check on a machine without NVIDIA GPUs: exit %d, want 0 and CPU only\n%s", code, out)
	case !noGPUOnBus && (code != 1 || !strings.Contains(out, "no NVIDIA driver loaded")):
		t.Errorf("check on a machine with NVIDIA GPUs and no driver: exit %d, want 1 naming the driver\n%s", code, out)
	}
	out, code = run("check", "--json", "--root", t.TempDir())
	if !strings.Contains(out, `"status"`) || (code != 0 && code != 1) {
		t.Errorf("check --json: exit %d\n%s", code, out)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The mocked DGX A100 runs driver 550.54.15; on the test day (2026-11-22)
// branch 550 is past its end of life. check warns and stays healthy,
// inventory says so in a line (and in `warnings` with --json), and
// driver.branch "lts" is compared as 620.
func TestCheckAndInventoryWarnAboutAnEndOfLifeBranch(t *testing.T) {
	const warning = "driver 550.54.15: branch 550 is past its end of life (NVIDIA lists it as ended by August 2025) and gets no more bug or security fixes; the nearest supported branch is 595 (production, end of life March 2027)"
	env, stdout, _, _ := testEnv(nvmltest.NewDGXA100(), nil)
	sysfs, root := t.TempDir(), t.TempDir()

	if code := runIn(env, "check", "--sysfs", sysfs, "--root", root, "--expect-gpus", "8"); code != exitOK {
		t.Fatalf("check: exit %d, want 0: an end-of-life branch is a warning, not a problem\n%s", code, stdout.String())
	}
	if !strings.Contains(stdout.String(), "health: healthy\n") || !strings.Contains(stdout.String(), "  warning: "+warning+"\n") {
		t.Errorf("check output lacks the healthy verdict or the warning line:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := runIn(env, "check", "--json", "--sysfs", sysfs, "--root", root, "--expect-gpus", "8"); code != exitOK {
		t.Fatalf("check --json: exit %d\n%s", code, stdout.String())
	}
	var health bootstrap.Health
	if err := json.Unmarshal(stdout.Bytes(), &health); err != nil {
		t.Fatalf("check --json: %v\n%s", err, stdout.String())
	}
	if health.Status != bootstrap.HealthHealthy || len(health.Warnings) != 1 || health.Warnings[0] != warning {
		t.Errorf("check --json: status %q, warnings %q", health.Status, health.Warnings)
	}

	stdout.Reset()
	if code := runIn(env, "inventory", "--sysfs", sysfs); code != exitOK {
		t.Fatalf("inventory: exit %d", code)
	}
	if !strings.Contains(stdout.String(), "Driver: 550.54.15 (CUDA 12.4)\nWarning: "+warning+"\n") {
		t.Errorf("inventory lacks the warning line under the driver:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := runIn(env, "inventory", "--json", "--sysfs", sysfs); code != exitOK {
		t.Fatalf("inventory --json: exit %d", code)
	}
	var inventory inventoryJSON
	if err := json.Unmarshal(stdout.Bytes(), &inventory); err != nil {
		t.Fatalf("inventory --json: %v\n%s", err, stdout.String())
	}
	if len(inventory.Warnings) != 1 || inventory.Warnings[0] != warning || inventory.Driver.Version != "550.54.15" || len(inventory.Devices) != 8 {
		t.Errorf("inventory --json: driver %+v, %d devices, warnings %q", inventory.Driver, len(inventory.Devices), inventory.Warnings)
	}

	// --driver-branch lts: the running 550 is compared with 620, the
	// number "lts" stands for today, not with the word.
	stdout.Reset()
	if code := runIn(env, "check", "--sysfs", sysfs, "--root", root, "--driver-branch", "lts"); code != 1 {
		t.Errorf("check --driver-branch lts: exit %d, want 1\n%s", code, stdout.String())
	}
	if !strings.Contains(stdout.String(), `problem: driver branch is 550 (550.54.15) but driver.branch is "lts", branch 620 today; run gpu-bootstrap apply and reboot`) {
		t.Errorf("check --driver-branch lts does not compare with 620:\n%s", stdout.String())
	}
}

func TestApplySaysAPlanWarningOnce(t *testing.T) {
	said := []string{"driver: branch 535 reached its end of life in June 2026", "driver: apt-get warned"}
	health := []string{"branch 535 reached its end of life in June 2026", "the cdi spec is stale"}
	got := notSaidYet(health, said)
	if len(got) != 1 || got[0] != "the cdi spec is stale" {
		t.Errorf("notSaidYet = %q, want only the warning apply did not say", got)
	}
}

package bootstrap

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestDebianDriverNamesPerBranch pins what the step asks NVIDIA's debian12
// and debian13 repositories for, for every branch NVIDIA publishes today
// (driver_debian_names.go cites the sources): the same unbranched names
// before and after 590 (only Ubuntu's changed there), the pinning package
// from 570 on, the step's preferences file before it (535).
func TestDebianDriverNamesPerBranch(t *testing.T) {
	tests := []struct {
		cfg     DriverConfig
		install string
		lock    string
	}{
		{DriverConfig{Branch: "535", KernelModules: "proprietary"}, "cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1", aptLockPath + " (branch 535)"},
		{DriverConfig{Branch: "535"}, "nvidia-kernel-open-dkms nvidia-driver nvidia-driver-cuda libnvidia-ml1", aptLockPath + " (branch 535)"},
		{DriverConfig{Branch: "580"}, "nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-580"},
		{DriverConfig{Branch: "595"}, "nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-595"},
		{DriverConfig{Branch: "595", KernelModules: "proprietary"}, "cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-595"},
		{DriverConfig{Branch: "610"}, "nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-610"},
		{DriverConfig{Branch: "615", KernelModules: "proprietary"}, "cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-615"},
		{DriverConfig{Branch: "620"}, "nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-620"},
	}
	for _, repo := range []string{"debian12", "debian13"} {
		names := debianNames(repo)
		for _, tt := range tests {
			if got := strings.Join(names.installPackages(tt.cfg), " "); got != tt.install {
				t.Errorf("%s %s %s: install %q, want %q", repo, tt.cfg.Branch, tt.cfg.flavor(), got, tt.install)
			}
			if got := wantedLock(names, tt.cfg).String(); got != tt.lock {
				t.Errorf("%s %s %s: lock %q, want %q", repo, tt.cfg.Branch, tt.cfg.flavor(), got, tt.lock)
			}
		}
	}
	if !strings.Contains(debian13Names.distro, "Debian 13") || !strings.Contains(debian12Names.distro, "Debian 12") {
		t.Errorf("distro names %q, %q", debian12Names.distro, debian13Names.distro)
	}
}

// TestDebianPlanRefusesProprietaryFrom620: the guide's 620 edition removed
// the proprietary kernel modules, so the repository has no
// nvidia-kernel-dkms or cuda-drivers there; the plan refuses before
// anything installs.
func TestDebianPlanRefusesProprietaryFrom620(t *testing.T) {
	h, _ := osReleaseHost(t, "debian-13")
	h.GPUs = driverlessGPUs(t, a100)
	_, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "620", KernelModules: KernelModulesProprietary}, arch: "amd64"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "driver.kernel_modules" {
		t.Fatalf("err = %v, want a field error on driver.kernel_modules", err)
	}
	if _, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "615", KernelModules: KernelModulesProprietary}, arch: "amd64"}}); err != nil {
		t.Errorf("615 proprietary: %v, want it allowed (the last branch with proprietary modules)", err)
	}
}

// TestDebian13PlanUsesTheDebian13Repository: a Debian 13 image gets
// NVIDIA's debian13 repository (keyring and index), the same names and the
// branch's pinning package.
func TestDebian13PlanUsesTheDebian13Repository(t *testing.T) {
	h, _ := osReleaseHost(t, "debian-13")
	h.GPUs = driverlessGPUs(t, a100)
	if err := os.MkdirAll(h.Path("/lib/modules/6.12.57+deb13-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	changes := planDriver(t, h, DriverConfig{Branch: "595"})
	equalLines(t, "changes", changeCommands(changes), [][]string{
		{
			"env DEBIAN_FRONTEND=noninteractive apt-get update",
			"env DEBIAN_FRONTEND=noninteractive apt-get install -y ca-certificates curl",
			"curl -fsSL -o /tmp/cuda-keyring_1.1-1_all.deb https://developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64/cuda-keyring_1.1-1_all.deb",
			"dpkg -i /tmp/cuda-keyring_1.1-1_all.deb",
		},
		{
			"check",
			"env DEBIAN_FRONTEND=noninteractive apt-get update",
			"check",
			"env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-driver-pinning-595",
			"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades linux-headers-6.12.57+deb13-amd64 nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1",
			"check",
		},
	})
	if !strings.Contains(changes[0].Summary, "for debian13") {
		t.Errorf("setup summary %q does not name the debian13 repository", changes[0].Summary)
	}
	// apt-get update's warnings about the debian13 repository are fatal.
	var fatal []string
	for _, op := range changes[1].Ops {
		if c, ok := op.(CommandOp); ok {
			fatal = append(fatal, c.FatalWarnings...)
		}
	}
	if strings.Join(fatal, " ") != "developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64" {
		t.Errorf("fatal warnings %q, want the debian13 repository", fatal)
	}
}

// TestDebianPlanReplacesAVersionPinningPackage: a version's pinning package
// (nvidia-driver-pinning-595.71.05) next to the branch's is a second lock
// that holds the stack at one release; it is purged, the branch's stays.
func TestDebianPlanReplacesAVersionPinningPackage(t *testing.T) {
	stack := stackStatus("595.71.05-1", "nvidia-open", "nvidia-kernel-open-dkms", "nvidia-driver", "libnvidia-ml1")
	status := ubuntuDpkgStatus(append(stack,
		[3]string{"nvidia-driver-pinning-595", "install", "595-1"},
		[3]string{"nvidia-driver-pinning-595.71.05", "hold", "595.71.05-1"})...)
	h := debianImage(t, status, nil)
	changes := planDriver(t, h, DriverConfig{Branch: "595"})
	equalLines(t, "ops", changeCommands(changes), [][]string{{
		"check",
		"apt-mark unhold nvidia-driver-pinning-595.71.05",
		"env DEBIAN_FRONTEND=noninteractive apt-get purge -y nvidia-driver-pinning-595.71.05",
	}})
	if want := "in place of nvidia-driver-pinning-595, nvidia-driver-pinning-595.71.05"; !strings.Contains(changes[0].Summary, want) {
		t.Errorf("summary %q does not say %q", changes[0].Summary, want)
	}
	for name, branch := range map[string]string{
		"nvidia-driver-pinning-595.71.05": "595", "nvidia-driver-pinning-580.105.08": "580", "nvidia-driver-pinning-620": "620",
		"nvidia-driver-pinning-595.71.05.1": "", "nvidia-driver-pinning-latest": "", "nvidia-driver-pinning": "",
	} {
		if got := pinningBranch(name); got != branch {
			t.Errorf("pinningBranch(%q) = %q, want %q", name, got, branch)
		}
	}
}

// TestDebianPlanReplacesAnotherReleasesCUDARepository: a node upgraded from
// Debian 12 keeps debian12's cuda-keyring entry; the plan purges it and
// installs debian13's, and leaves a node that has its own entry alone.
func TestDebianPlanReplacesAnotherReleasesCUDARepository(t *testing.T) {
	const old = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"
	h, _ := osReleaseHost(t, "debian-13")
	h.GPUs = driverlessGPUs(t, a100)
	writeTarget(t, h, cudaKeyringPath, "key", 0o644)
	writeTarget(t, h, old, "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n", 0o644)
	changes := planDriver(t, h, DriverConfig{Branch: "595"})
	if len(changes) != 2 {
		t.Fatalf("changes %v, want the repository swap and the install", changeCommands(changes))
	}
	// The new keyring is downloaded before the old one goes: a failed
	// download leaves the node's repository and keyring as they were.
	equalLines(t, "setup", changeCommands(changes[:1]), [][]string{{
		"env DEBIAN_FRONTEND=noninteractive apt-get update",
		"env DEBIAN_FRONTEND=noninteractive apt-get install -y ca-certificates curl",
		"curl -fsSL -o /tmp/cuda-keyring_1.1-1_all.deb https://developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64/cuda-keyring_1.1-1_all.deb",
		"env DEBIAN_FRONTEND=noninteractive apt-get purge -y cuda-keyring",
		"remove " + old,
		"dpkg -i /tmp/cuda-keyring_1.1-1_all.deb",
	}})
	for _, want := range []string{"replace NVIDIA's CUDA apt repository of another Debian release (" + old + ") with the one for debian13", "Debian GNU/Linux 13 (trixie)"} {
		if !strings.Contains(changes[0].Summary, want) {
			t.Errorf("summary %q does not say %q", changes[0].Summary, want)
		}
	}

	// debian13's entry next to debian12's: only the old entry goes.
	const own = "/etc/apt/sources.list.d/cuda-debian13-x86_64.list"
	writeTarget(t, h, own, "deb https://developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64/ /\n", 0o644)
	changes = planDriver(t, h, DriverConfig{Branch: "595"})
	if len(changes) != 2 || !strings.Contains(changes[0].Summary, "remove NVIDIA's CUDA apt repository of another Debian release ("+old+") next to the one for debian13") {
		t.Fatalf("with both entries, changes %v, want the old entry removed, then the install", changeCommands(changes))
	}
	equalLines(t, "cleanup", changeCommands(changes[:1]), [][]string{{"remove " + old}})

	// Only debian13's entry: nothing but the install.
	if err := os.Remove(h.Path(old)); err != nil {
		t.Fatal(err)
	}
	if changes := planDriver(t, h, DriverConfig{Branch: "595"}); len(changes) != 1 || !strings.HasPrefix(changes[0].Summary, "install NVIDIA driver branch 595") {
		t.Errorf("with debian13's entry only, changes %v, want only the install", changeCommands(changes))
	}
}

// TestDebianStaleCUDASourcesByContent: another release's NVIDIA repository
// is recognized by what the file says, not its name (a deb822 file of any
// name), "Enabled: no" and commented lines do not count, and a file with
// other entries too is left alone.
func TestDebianStaleCUDASourcesByContent(t *testing.T) {
	h, _ := osReleaseHost(t, "debian-13")
	const dir = "/etc/apt/sources.list.d/"
	writeTarget(t, h, dir+"nvidia-cuda.sources", "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/\nSuites: /\nSigned-By: /usr/share/keyrings/cuda-archive-keyring.gpg\n", 0o644)
	writeTarget(t, h, dir+"cuda-old.sources", "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/\nSuites: /\nEnabled: no\n", 0o644)
	writeTarget(t, h, dir+"commented.list", "# deb https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n", 0o644)
	writeTarget(t, h, dir+"mixed.list", "deb https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\ndeb https://example.org/debian trixie main\n", 0o644)
	writeTarget(t, h, dir+"cuda-debian13-x86_64.list", "deb https://developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64/ /\n", 0o644)
	stale, err := staleCUDASources(h, "debian13")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stale, " "); got != dir+"nvidia-cuda.sources" {
		t.Errorf("stale = %q, want only %s", got, dir+"nvidia-cuda.sources")
	}
}

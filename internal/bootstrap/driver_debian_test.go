package bootstrap

import (
	"context"
	"strings"
	"testing"
)

// TestDebian12DriverPackageNames pins the names the step asks NVIDIA's
// debian12 CUDA repository for (driver_debian_names.go cites where each
// comes from).
func TestDebian12DriverPackageNames(t *testing.T) {
	tests := []struct {
		description string
		cfg         DriverConfig
		install     string
		lock        string
	}{
		{"open 580: nvidia-open under its pinning package", DriverConfig{Branch: "580"}, "nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-580"},
		{"proprietary 570: cuda-drivers under its pinning package", DriverConfig{Branch: "570", KernelModules: "proprietary"}, "cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1", "nvidia-driver-pinning-570"},
		{"proprietary 550: cuda-drivers under the step's preferences file", DriverConfig{Branch: "550", KernelModules: "proprietary"}, "cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1", aptLockPath + " (branch 550)"},
		{"open 550: the open kernel module package, no Ubuntu name", DriverConfig{Branch: "550"}, "nvidia-kernel-open-dkms nvidia-driver nvidia-driver-cuda libnvidia-ml1", aptLockPath + " (branch 550)"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			install := strings.Join(debian12Names.installPackages(tt.cfg), " ")
			if install != tt.install {
				t.Errorf("install %q, want %q", install, tt.install)
			}
			if strings.Contains(install, "nvidia-driver-"+tt.cfg.Branch) {
				t.Errorf("install %q has an Ubuntu-style branch name, which NVIDIA's Debian repository does not have", install)
			}
			if lock := wantedLock(debian12Names, tt.cfg).String(); lock != tt.lock {
				t.Errorf("lock %q, want %q", lock, tt.lock)
			}
		})
	}
	lock := string(aptLockFile(debian12Names, "550"))
	for _, want := range []string{"\nPin: version 550.*\n", "\nPin-Priority: 1000\n", " libnvidia-ml1 ", " nvidia-kernel-open-dkms ", " nvidia-kernel-dkms ", " nvidia-driver ", " cuda-drivers-550 nvidia-open-550\n"} {
		if !strings.Contains(lock, want) {
			t.Errorf("the preferences file lacks %q:\n%s", want, lock)
		}
	}
}

// debianImage is a Debian 12 image root with the CUDA repository set up and
// the given dpkg status and files.
func debianImage(t *testing.T, status string, files map[string]string) *Host {
	t.Helper()
	h, _ := osReleaseHost(t, "debian-12")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, cudaKeyringPath, "key", 0o644)
	writeTarget(t, h, dpkgStatusPath, status, 0o644)
	for path, content := range files {
		writeTarget(t, h, path, content, 0o644)
	}
	return h
}

func stackStatus(version string, names ...string) [][3]string {
	var out [][3]string
	for _, n := range names {
		out = append(out, [3]string{n, "install", version})
	}
	return out
}

func planDriver(t *testing.T, h *Host, cfg DriverConfig) []Change {
	t.Helper()
	changes, err := driverStep{cfg: cfg, arch: "amd64"}.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

func TestDebianPlanJudgesTheBranchByTheInstalledStack(t *testing.T) {
	lock550 := map[string]string{aptLockPath: string(aptLockFile(debian12Names, "550"))}
	t.Run("a stack upgraded to 590 behind the lock is seen and moved back", func(t *testing.T) {
		status := ubuntuDpkgStatus(stackStatus("590.44.01-1", "libnvidia-ml1", "nvidia-kernel-open-dkms", "nvidia-driver", "nvidia-open", "libcuda1")...)
		h := debianImage(t, status, lock550)
		changes := planDriver(t, h, DriverConfig{Branch: "550"})
		if len(changes) != 1 {
			t.Fatalf("%d changes, want the one move", len(changes))
		}
		want := "driver stack on branch 590 (libnvidia-ml1 590.44.01-1, nvidia-driver 590.44.01-1, nvidia-kernel-open-dkms 590.44.01-1), asked 550"
		if !strings.Contains(changes[0].Summary, want) {
			t.Errorf("summary %q does not say %q", changes[0].Summary, want)
		}
		equalLines(t, "ops", changeCommands(changes), [][]string{{
			"check",
			"env DEBIAN_FRONTEND=noninteractive apt-get update",
			"check",
			// The lock is right: only the stack moves, every installed
			// package named, nvidia-open (none on 550) removed.
			"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades nvidia-kernel-open-dkms nvidia-driver nvidia-driver-cuda libnvidia-ml1 libcuda1 nvidia-open-",
			"check",
		}})
	})
	t.Run("a mixed stack is reported as such", func(t *testing.T) {
		status := ubuntuDpkgStatus(append(stackStatus("550.163.01-1", "nvidia-kernel-dkms", "nvidia-driver", "cuda-drivers"), stackStatus("590.44.01-1", "libnvidia-ml1")...)...)
		h := debianImage(t, status, lock550)
		changes := planDriver(t, h, DriverConfig{Branch: "550", KernelModules: "proprietary"})
		want := "mixed driver stack: branch 550 (nvidia-driver 550.163.01-1, nvidia-kernel-dkms 550.163.01-1), branch 590 (libnvidia-ml1 590.44.01-1), asked 550"
		if len(changes) != 1 || !strings.Contains(changes[0].Summary, want) {
			t.Errorf("changes %v, want one saying %q", changes, want)
		}
	})
	t.Run("the stack and lock on the branch are up to date, and a patch release is apt's to take", func(t *testing.T) {
		status := ubuntuDpkgStatus(stackStatus("550.163.01-1", "nvidia-kernel-dkms", "nvidia-driver", "cuda-drivers", "libnvidia-ml1")...)
		h := debianImage(t, status, lock550)
		if changes := planDriver(t, h, DriverConfig{Branch: "550", KernelModules: "proprietary"}); len(changes) != 0 {
			t.Errorf("up-to-date stack planned %v", changeCommands(changes))
		}
	})
}

func TestDebianPlanLeavesAPinnedBranchWithItsPin(t *testing.T) {
	status := ubuntuDpkgStatus(append(stackStatus("570.195.03-1", "nvidia-open", "nvidia-kernel-open-dkms", "nvidia-driver", "libnvidia-ml1"),
		[3]string{"nvidia-driver-pinning-570", "install", "570-1"}, [3]string{"cuda-drivers-550", "hold", "550.163.01-1"})...)
	h := debianImage(t, status, nil)
	changes := planDriver(t, h, DriverConfig{Branch: "550"})
	equalLines(t, "ops", changeCommands(changes), [][]string{{
		"check",
		"env DEBIAN_FRONTEND=noninteractive apt-get update",
		"check",
		"apt-mark unhold cuda-drivers-550",
		"env DEBIAN_FRONTEND=noninteractive apt-get purge -y nvidia-driver-pinning-570",
		"write " + aptLockPath,
		"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades nvidia-kernel-open-dkms nvidia-driver nvidia-driver-cuda libnvidia-ml1 cuda-drivers-550- nvidia-open-",
		"check",
	}})
	undo := opLines(changes[0].Undo)
	wantUndo := []string{"check", "remove " + aptLockPath, "env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades nvidia-driver-pinning-570=570-1", "apt-mark hold cuda-drivers-550"}
	if strings.Join(undo, "\n") != strings.Join(wantUndo, "\n") {
		t.Errorf("undo:\n%s\nwant:\n%s", strings.Join(undo, "\n"), strings.Join(wantUndo, "\n"))
	}
	for _, want := range []string{"in place of nvidia-driver-pinning-570", "release the hold on cuda-drivers-550"} {
		if !strings.Contains(changes[0].Summary, want) {
			t.Errorf("summary %q does not say %q", changes[0].Summary, want)
		}
	}
}

func TestDebianPlanWantsExactlyOneLock(t *testing.T) {
	stack := stackStatus("580.95.05-1", "nvidia-open", "nvidia-kernel-open-dkms", "nvidia-driver", "libnvidia-ml1")
	t.Run("a removed but not purged pinning package still pins, and is purged", func(t *testing.T) {
		status := ubuntuDpkgStatus(append(stack, [3]string{"nvidia-driver-pinning-580", "install", "580-1"})...) +
			"Package: nvidia-driver-pinning-570\nStatus: deinstall ok config-files\nVersion: 570-1\n\n"
		h := debianImage(t, status, nil)
		changes := planDriver(t, h, DriverConfig{Branch: "580"})
		equalLines(t, "ops", changeCommands(changes), [][]string{{
			"check",
			"env DEBIAN_FRONTEND=noninteractive apt-get purge -y nvidia-driver-pinning-570",
		}})
	})
	t.Run("the step's own file goes when a pinning package takes over", func(t *testing.T) {
		status := ubuntuDpkgStatus(append(stack, [3]string{"nvidia-driver-pinning-580", "install", "580-1"})...)
		h := debianImage(t, status, map[string]string{aptLockPath: string(aptLockFile(debian12Names, "550"))})
		changes := planDriver(t, h, DriverConfig{Branch: "580"})
		equalLines(t, "ops", changeCommands(changes), [][]string{{"check", "remove " + aptLockPath}})
	})
}

// TestUbuntuDriverPackageNames pins the -server names the step asks
// Ubuntu's archive for (driver_debian_names.go cites them).
func TestUbuntuDriverPackageNames(t *testing.T) {
	tests := []struct {
		cfg  DriverConfig
		want ubuntuNames
	}{
		{DriverConfig{Branch: "580"}, ubuntuNames{main: "nvidia-headless-580-server-open", utils: "nvidia-utils-580-server", kernel: "nvidia-dkms-580-server-open", nvml: "libnvidia-compute-580-server"}},
		{DriverConfig{Branch: "535", KernelModules: "proprietary"}, ubuntuNames{main: "nvidia-headless-535-server", utils: "nvidia-utils-535-server", kernel: "nvidia-dkms-535-server", nvml: "libnvidia-compute-535-server"}},
	}
	for _, tt := range tests {
		if got := ubuntuNamesFor(tt.cfg); got != tt.want {
			t.Errorf("%s %s: %+v, want %+v", tt.cfg.Branch, tt.cfg.flavor(), got, tt.want)
		}
	}
}

func TestUbuntuPlanSeesAMixedStackAndTheOtherFlavor(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-headless-580-server-open", "hold", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"nvidia-utils-580-server", "hold", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"nvidia-dkms-580-server", "install", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"libnvidia-compute-570-server", "install", "570.195.03-0ubuntu0.24.04.1"},
	), 0o644)
	changes := planDriver(t, h, DriverConfig{Branch: "580"})
	if len(changes) != 1 {
		t.Fatalf("changes %v, want one install", changeCommands(changes))
	}
	for _, want := range []string{
		"mixed driver stack: branch 570 (libnvidia-compute-570-server 570.195.03-0ubuntu0.24.04.1), branch 580 (nvidia-dkms-580-server 580.95.05-0ubuntu0.24.04.2), asked 580",
		"nvidia-dkms-580-server (the other kernel module flavor) is installed",
	} {
		if !strings.Contains(changes[0].Summary, want) {
			t.Errorf("summary %q does not say %q", changes[0].Summary, want)
		}
	}
	install := changeCommands(changes)[0][2]
	for _, want := range []string{" libnvidia-compute-570-server-", " nvidia-dkms-580-server-"} {
		if !strings.Contains(install, want) {
			t.Errorf("install %q does not remove %q", install, want)
		}
	}
}

func TestDebianPlanReleasesAHeldPinningPackageItPurges(t *testing.T) {
	stack := stackStatus("550.163.01-1", "cuda-drivers", "nvidia-kernel-dkms", "nvidia-driver", "libnvidia-ml1")
	status := ubuntuDpkgStatus(append(stack, [3]string{"nvidia-driver-pinning-550", "hold", "550-1"})...)
	h := debianImage(t, status, nil)
	changes := planDriver(t, h, DriverConfig{Branch: "550", KernelModules: "proprietary"})
	equalLines(t, "ops", changeCommands(changes), [][]string{{
		"check",
		"apt-mark unhold nvidia-driver-pinning-550",
		"env DEBIAN_FRONTEND=noninteractive apt-get purge -y nvidia-driver-pinning-550",
		"write " + aptLockPath,
	}})
}

package bootstrap

import (
	"context"
	"strings"
	"testing"
)

const ubuntuCUDASourceLine = "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/ /\n"

// ubuntuCUDAHost is an Ubuntu 24.04 root with NVIDIA's ubuntu2404
// repository configured as cuda-keyring configures it, and the packages.
func ubuntuCUDAHost(t *testing.T, entries ...[3]string) (*Host, *RecordingRunner) {
	t.Helper()
	h, runner := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, cudaKeyringPath, "key", 0o644)
	writeTarget(t, h, "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list", ubuntuCUDASourceLine, 0o644)
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(entries...), 0o644)
	return h, runner
}

func planUbuntu(t *testing.T, h *Host, cfg DriverConfig) ([]Change, Plan) {
	t.Helper()
	plan, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: cfg, arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	return plan[0].Changes, plan
}

const aptGetNI = "env DEBIAN_FRONTEND=noninteractive apt-get "

func TestUbuntuSourceChoice(t *testing.T) {
	for _, tt := range []struct {
		description string
		file, text  string
		cuda        bool
	}{
		{"no NVIDIA source: Ubuntu's archive", "/etc/apt/sources.list", "deb http://archive.ubuntu.com/ubuntu noble main restricted\n", false},
		{"cuda-keyring's .list", "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list", ubuntuCUDASourceLine, true},
		{"a deb822 .sources file", "/etc/apt/sources.list.d/nvidia.sources", "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/\nSuites: /\n", true},
		{"the guide's local repository", "/etc/apt/sources.list.d/nvidia-driver-local.list", "deb [signed-by=/usr/share/keyrings/nvidia-driver-local-595.71.05-keyring.gpg] file:///var/nvidia-driver-local-repo-ubuntu2404-595.71.05 /\n", true},
		{"a deb822 stanza with Enabled: no does not count", "/etc/apt/sources.list.d/nvidia.sources", "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/\nSuites: /\nEnabled: no\n\nTypes: deb\nURIs: http://archive.ubuntu.com/ubuntu\nSuites: noble\n", false},
		{"a commented-out line does not count", "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list", "# " + ubuntuCUDASourceLine, false},
		{"another release's repository does not count", "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list", strings.ReplaceAll(ubuntuCUDASourceLine, "2404", "2204"), false},
		{"a file apt does not read does not count", "/etc/apt/sources.list.d/cuda.list.disabled", ubuntuCUDASourceLine, false},
	} {
		t.Run(tt.description, func(t *testing.T) {
			h, _ := osReleaseHost(t, "ubuntu-24.04")
			writeTarget(t, h, tt.file, tt.text, 0o644)
			d, err := readDistro(h)
			if err != nil {
				t.Fatal(err)
			}
			cuda, why, err := ubuntuSource(h, d)
			if err != nil || cuda != tt.cuda {
				t.Fatalf("ubuntuSource = %v %q %v, want %v", cuda, why, err, tt.cuda)
			}
			if cuda && !strings.Contains(why, tt.file) {
				t.Errorf("why = %q, want it to name %s", why, tt.file)
			}
		})
	}
}

func TestUbuntuCUDANames(t *testing.T) {
	open595 := DriverConfig{Branch: "595"}
	prop580 := DriverConfig{Branch: "580", KernelModules: KernelModulesProprietary}
	equalLines(t, "595 open", [][]string{ubuntuCUDAInstall(open595)}, [][]string{{"libnvidia-compute", "nvidia-dkms-open", "nvidia-utils"}})
	equalLines(t, "580 proprietary", [][]string{ubuntuCUDAInstall(prop580)}, [][]string{{"libnvidia-compute-580", "nvidia-dkms-580", "nvidia-utils-580"}})
	for _, tt := range []struct {
		cfg  DriverConfig
		name string
		want string // "" keeps it; else a word of the reason
	}{
		{open595, "libnvidia-gl", ""},
		{open595, "nvidia-driver-open", ""},
		{open595, "nvidia-open", ""},
		{open595, "libnvidia-compute-580", "named for branch 580"},
		{open595, "nvidia-dkms", "proprietary"},
		{open595, "cuda-drivers", "proprietary"},
		{prop580, "libnvidia-compute", "unbranched"},
		{prop580, "cuda-drivers", ""},
		{prop580, "cuda-drivers-580", ""},
		{prop580, "cuda-drivers-570", "branch 570"},
		{prop580, "nvidia-dkms-580-open", "open"},
		{prop580, "nvidia-driver-pinning-580", ""},
		{prop580, "libnvidia-compute-580-server", ""}, // Ubuntu's archive: not this naming
	} {
		got := ubuntuCUDAUnwanted(tt.cfg, tt.name)
		if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ubuntuCUDAUnwanted(%s %s, %s) = %q, want %q", tt.cfg.Branch, tt.cfg.flavor(), tt.name, got, tt.want)
		}
	}
	for name, want := range map[string]string{"libnvidia-gl-580": "libnvidia-gl", "nvidia-driver-580-open": "nvidia-driver-open", "cuda-drivers": "nvidia-open", "cuda-drivers-580": "nvidia-open", "nvidia-dkms": ""} {
		if got := ubuntuCUDACounterpart(open595, name); got != want {
			t.Errorf("counterpart of %s for 595 open = %q, want %q", name, got, want)
		}
	}
	if got := ubuntuCUDACounterpart(prop580, "nvidia-driver-open"); got != "nvidia-driver-580" {
		t.Errorf("counterpart of nvidia-driver-open for 580 proprietary = %q", got)
	}
}

func TestUbuntuCUDAFreshInstallPinsFirst(t *testing.T) {
	h, _ := ubuntuCUDAHost(t)
	changes, plan := planUbuntu(t, h, DriverConfig{Branch: "595"})
	equalLines(t, "changes", changeCommands(changes), [][]string{{
		"check", // no other apt or dpkg holds the lock
		aptGetNI + "update",
		"check", // the repository offers the branch
		aptGetNI + "install -y nvidia-driver-pinning-595",
		aptGetNI + "install -y --allow-downgrades libnvidia-compute nvidia-dkms-open nvidia-utils",
		"check", // the stack is the branch, nothing else
	}})
	if s := changes[0].Summary; !strings.Contains(s, "install NVIDIA driver branch 595 (open kernel modules) from NVIDIA's CUDA repository for ubuntu2404: libnvidia-compute, nvidia-dkms-open, nvidia-utils, locked to it by nvidia-driver-pinning-595") {
		t.Errorf("summary = %q", s)
	}
	if notes := plan[0].Notes; len(notes) != 1 || !strings.Contains(notes[0], "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list names NVIDIA's CUDA repository for ubuntu2404") {
		t.Errorf("notes = %q, want the source named", notes)
	}
}

func TestUbuntuCUDAUpToDate(t *testing.T) {
	h, _ := ubuntuCUDAHost(t,
		[3]string{"nvidia-driver-pinning-595", "install", "595-1ubuntu1"},
		[3]string{"libnvidia-compute", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-dkms-open", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-utils", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-kernel-common", "install", "595.71.05-1ubuntu1"},
	)
	if changes, _ := planUbuntu(t, h, DriverConfig{Branch: "595"}); len(changes) != 0 {
		t.Errorf("up to date, yet %v", changeCommands(changes))
	}
}

func TestUbuntuCUDAMovesAcrossTheRename(t *testing.T) {
	branch580 := [][3]string{
		{"nvidia-driver-pinning-580", "install", "580-1ubuntu1"},
		{"libnvidia-compute-580", "install", "580.95.05-1ubuntu1"},
		{"nvidia-dkms-580-open", "install", "580.95.05-1ubuntu1"},
		{"nvidia-utils-580", "hold", "580.95.05-1ubuntu1"},
		{"libnvidia-gl-580", "install", "580.95.05-1ubuntu1"},
	}
	t.Run("580 to 595", func(t *testing.T) {
		h, _ := ubuntuCUDAHost(t, branch580...)
		changes, _ := planUbuntu(t, h, DriverConfig{Branch: "595"})
		equalLines(t, "changes", changeCommands(changes), [][]string{{
			"check",
			aptGetNI + "update",
			"check",
			aptGetNI + "purge -y nvidia-driver-pinning-580",
			aptGetNI + "install -y nvidia-driver-pinning-595",
			"apt-mark unhold nvidia-utils-580",
			aptGetNI + "install -y --allow-downgrades libnvidia-compute nvidia-dkms-open nvidia-utils libnvidia-gl libnvidia-compute-580- libnvidia-gl-580- nvidia-dkms-580-open- nvidia-utils-580-",
			"check",
		}})
		if s := changes[0].Summary; !strings.Contains(s, "move the NVIDIA driver to branch 595") || !strings.Contains(s, "in place of nvidia-driver-pinning-580") {
			t.Errorf("summary = %q", s)
		}
	})
	t.Run("595 to 580", func(t *testing.T) {
		h, _ := ubuntuCUDAHost(t,
			[3]string{"nvidia-driver-pinning-595", "install", "595-1ubuntu1"},
			[3]string{"libnvidia-compute", "install", "595.71.05-1ubuntu1"},
			[3]string{"nvidia-dkms-open", "install", "595.71.05-1ubuntu1"},
			[3]string{"nvidia-utils", "install", "595.71.05-1ubuntu1"},
			[3]string{"nvidia-kernel-common", "install", "595.71.05-1ubuntu1"},
		)
		changes, _ := planUbuntu(t, h, DriverConfig{Branch: "580"})
		equalLines(t, "changes", changeCommands(changes), [][]string{{
			"check",
			aptGetNI + "update",
			"check",
			aptGetNI + "purge -y nvidia-driver-pinning-595",
			aptGetNI + "install -y nvidia-driver-pinning-580",
			aptGetNI + "install -y --allow-downgrades libnvidia-compute-580 nvidia-dkms-580-open nvidia-utils-580 nvidia-kernel-common-580 libnvidia-compute- nvidia-dkms-open- nvidia-kernel-common- nvidia-utils-",
			"check",
		}})
	})
	t.Run("Ubuntu's archive stack to NVIDIA's repository", func(t *testing.T) {
		h, _ := ubuntuCUDAHost(t,
			[3]string{"nvidia-headless-580-server-open", "hold", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"nvidia-utils-580-server", "hold", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"nvidia-dkms-580-server-open", "install", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"libnvidia-compute-580-server", "install", "580.95.05-0ubuntu0.24.04.2"},
		)
		changes, _ := planUbuntu(t, h, DriverConfig{Branch: "595"})
		equalLines(t, "changes", changeCommands(changes), [][]string{{
			"check",
			aptGetNI + "update",
			"check",
			aptGetNI + "install -y nvidia-driver-pinning-595",
			"apt-mark unhold nvidia-headless-580-server-open nvidia-utils-580-server",
			aptGetNI + "install -y --allow-downgrades libnvidia-compute nvidia-dkms-open nvidia-utils libnvidia-compute-580-server- nvidia-dkms-580-server-open- nvidia-headless-580-server-open- nvidia-utils-580-server-",
			"check",
		}})
	})
}

func TestUbuntuCUDAVersionPinIsPurged(t *testing.T) {
	h, _ := ubuntuCUDAHost(t,
		[3]string{"nvidia-driver-pinning-595", "install", "595-1ubuntu1"},
		[3]string{"nvidia-driver-pinning-595.71.05", "install", "595.71.05-1ubuntu1"},
		[3]string{"libnvidia-compute", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-dkms-open", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-utils", "install", "595.71.05-1ubuntu1"},
	)
	changes, _ := planUbuntu(t, h, DriverConfig{Branch: "595"})
	equalLines(t, "changes", changeCommands(changes), [][]string{{"check", aptGetNI + "purge -y nvidia-driver-pinning-595.71.05"}})
	// One purge, by the shared lock code: its Undo reinstalls the exact
	// version, and the summary names the pin once.
	equalLines(t, "undo", [][]string{opLines(changes[0].Undo)}, [][]string{{"check", aptGetNI + "install -y --allow-downgrades nvidia-driver-pinning-595.71.05=595.71.05-1ubuntu1"}})
	if s := changes[0].Summary; strings.Count(s, "nvidia-driver-pinning-595.71.05") != 1 {
		t.Errorf("summary names the version's pin %d times, want once: %q", strings.Count(s, "nvidia-driver-pinning-595.71.05"), s)
	}
}

func TestUbuntuArchiveRefusesNVIDIAStackWithoutItsSource(t *testing.T) {
	// NVIDIA's stack, and no source of NVIDIA's repository for 24.04 (a
	// do-release-upgrade from 22.04 left ubuntu2204's): the plan refuses
	// rather than replace it (and what depends on it) with Ubuntu's.
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list", "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n", 0o644)
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-driver-pinning-595", "install", "595-1ubuntu1"},
		[3]string{"cuda-drivers", "install", "595.71.05-1ubuntu1"},
		[3]string{"libnvidia-compute", "hold", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-dkms-open", "install", "595.71.05-1ubuntu1"},
		[3]string{"nvidia-utils", "install", "595.71.05-1ubuntu1"},
	), 0o644)
	_, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "595"}, arch: "amd64"}})
	for _, want := range []string{"driver.branch", "cuda-drivers, libnvidia-compute, nvidia-dkms-open, nvidia-utils", "add NVIDIA's repository for ubuntu2404 (cuda-keyring)", "apt-get purge cuda-drivers libnvidia-compute nvidia-dkms-open nvidia-utils nvidia-driver-pinning-595) to use Ubuntu's archive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

func TestUbuntuArchiveRefusesProprietaryFrom615(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	_, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "615", KernelModules: KernelModulesProprietary}, arch: "amd64"}})
	if err == nil || !strings.Contains(err.Error(), "driver.kernel_modules") || !strings.Contains(err.Error(), "open kernel modules only") {
		t.Fatalf("err = %v, want a driver.kernel_modules error", err)
	}
	// 610 still has them, and NVIDIA's repository has 615's.
	if _, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "610", KernelModules: KernelModulesProprietary}, arch: "amd64"}}); err != nil {
		t.Errorf("610 proprietary: %v", err)
	}
	h, _ = ubuntuCUDAHost(t)
	if _, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "615", KernelModules: KernelModulesProprietary}, arch: "amd64"}}); err != nil {
		t.Errorf("615 proprietary from NVIDIA's repository: %v", err)
	}
}

func TestUbuntuArchiveChecksTheBranchIsOfferedAndPurgesPinsAfterTheInstall(t *testing.T) {
	// NVIDIA's pinning package left behind (its stack was purged): the
	// archive install goes first, the purge after it.
	h, runner := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-driver-pinning-595", "deinstall", "595-1ubuntu1"},
	), 0o644)
	changes, _ := planUbuntu(t, h, DriverConfig{Branch: "620"})
	equalLines(t, "changes", changeCommands(changes), [][]string{{
		aptGetNI + "update",
		"check",
		aptGetNI + "install -y nvidia-headless-620-server-open nvidia-utils-620-server",
		aptGetNI + "purge -y nvidia-driver-pinning-595",
		"apt-mark hold nvidia-headless-620-server-open nvidia-utils-620-server",
	}})
	check, ok := changes[0].Ops[1].(CheckOp)
	if !ok {
		t.Fatalf("op 1 is %T, want the CheckOp", changes[0].Ops[1])
	}
	// The archive (after apt-get update) has no 620-server.
	runner.Reply("apt-cache pkgnames nvidia-headless-", Output{Stdout: []byte("nvidia-headless-580-server-open\nnvidia-headless-595-server\nnvidia-headless-595-server-open\nnvidia-headless-no-dkms-595-server-open\nnvidia-headless-570-server-open\n")})
	err := check.Check(context.Background(), h)
	for _, want := range []string{"driver.branch", "Ubuntu's archive offers no nvidia-headless-620-server-open", "open kernel modules: 570, 580, 595)", "ubuntu2404 (cuda-keyring)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check: err = %v, want it to contain %q", err, want)
		}
	}
	// It has it.
	runner.Reply("apt-cache madison nvidia-headless-620-server-open", Output{Stdout: []byte(" nvidia-headless-620-server-open | 620.40.02-0ubuntu0.24.04.1 | http://archive.ubuntu.com/ubuntu noble-updates/restricted amd64 Packages\n")})
	if err := check.Check(context.Background(), h); err != nil {
		t.Errorf("check with the branch offered: %v", err)
	}
}

package bootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// pciFunction is an NVIDIA PCI function for a fake sysfs.
type pciFunction struct {
	address, device, class, driver string
}

// driverlessGPUs is the real nvml.Library on a machine without the NVIDIA
// driver (go-nvml pointed at a library that does not exist), whose sysfs
// lists the given PCI functions.
func driverlessGPUs(t *testing.T, functions ...pciFunction) nvml.Library {
	t.Helper()
	sysfs := t.TempDir()
	for _, fn := range functions {
		dir := filepath.Join(sysfs, "bus/pci/devices", fn.address)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, value := range map[string]string{"vendor": "0x10de", "device": "0x" + fn.device, "class": "0x" + fn.class, "numa_node": "0"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(value+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if fn.driver != "" {
			driverDir := filepath.Join(sysfs, "bus/pci/drivers", fn.driver)
			if err := os.MkdirAll(driverDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(driverDir, filepath.Join(dir, "driver")); err != nil {
				t.Fatal(err)
			}
		}
	}
	lib := gonvml.New(gonvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
	return nvml.New(nvml.Options{Lib: lib, SysfsRoot: sysfs})
}

// a100 is one A100-SXM4-40GB (device 0x20b0, a 3D controller) with no driver bound.
var a100 = pciFunction{address: "0000:07:00.0", device: "20b0", class: "030200"}

// dgxGPUs is the mocked DGX A100 running driver 550.54.15.
func dgxGPUs(t *testing.T, fleet *nvmltest.Fleet) nvml.Library {
	t.Helper()
	return nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: t.TempDir()})
}

// commandLines spells commands without their chroot prefix.
func commandLines(cmds []Command) []string {
	lines := make([]string, len(cmds))
	for i, c := range cmds {
		lines[i] = Command{Name: c.Name, Args: c.Args}.String()
	}
	return lines
}

// opLines spells ops without the chroot prefix of their commands; a check
// is "check".
func opLines(ops []Op) []string {
	lines := make([]string, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case CommandOp:
			lines[i] = commandLines([]Command{op.Command})[0]
		case CheckOp:
			lines[i] = "check"
		default:
			lines[i] = op.String()
		}
	}
	return lines
}

// commandsOf are the commands a change runs.
func commandsOf(c Change) []Command {
	var cmds []Command
	for _, op := range c.Ops {
		if op, ok := op.(CommandOp); ok {
			cmds = append(cmds, op.Command)
		}
	}
	return cmds
}

// changeCommands is every change's command lines, one slice per change
// ("action" for a GPU action, "file <path>" for a file).
func changeCommands(changes []Change) [][]string {
	out := make([][]string, len(changes))
	for i, c := range changes {
		switch {
		case c.File() != nil:
			out[i] = []string{"file " + c.File().Path}
		case c.Action() != nil:
			out[i] = []string{"action"}
		default:
			out[i] = opLines(c.Ops)
		}
	}
	return out
}

func equalLines(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	g, w := joinLines(got), joinLines(want)
	if g != w {
		t.Errorf("%s:\ngot:\n%s\nwant:\n%s", what, g, w)
	}
}

func joinLines(changes [][]string) string {
	var b strings.Builder
	for i, c := range changes {
		b.WriteString("change " + string(rune('1'+i)) + ":\n")
		for _, line := range c {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}

func TestDriverConfigValidate(t *testing.T) {
	tests := []struct {
		description string
		cfg         DriverConfig
		field       string // "" when valid
		says        string
	}{
		{description: "a branch with the default open modules is valid", cfg: DriverConfig{Branch: "580"}},
		{description: "proprietary modules on 535 are valid", cfg: DriverConfig{Branch: "535", KernelModules: "proprietary"}},
		{description: "a missing branch is named", cfg: DriverConfig{}, field: "driver.branch", says: "is required"},
		{description: "a full version is not a branch, and the branch is suggested", cfg: DriverConfig{Branch: "580.95.05"}, field: "driver.branch", says: `give only its branch, "580"`},
		{description: "two digits are not a branch", cfg: DriverConfig{Branch: "58"}, field: "driver.branch", says: "three-digit major version"},
		{description: "a name is not a branch", cfg: DriverConfig{Branch: "latest"}, field: "driver.branch", says: "three-digit"},
		{description: "an unknown flavor is named", cfg: DriverConfig{Branch: "580", KernelModules: "closed"}, field: "driver.kernel_modules", says: `"open"`},
		{description: "open modules do not exist before 515", cfg: DriverConfig{Branch: "470"}, field: "driver.kernel_modules", says: "515"},
		{description: "proprietary modules end with 620", cfg: DriverConfig{Branch: "620", KernelModules: "proprietary"}, field: "driver.kernel_modules", says: "only the open kernel modules"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			errs := tt.cfg.validate("driver")
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), errs)
			}
			var fe *FieldError
			if !errors.As(errs[0], &fe) || fe.Field != tt.field || !strings.Contains(fe.Problem, tt.says) {
				t.Errorf("error %v, want field %s saying %q", errs[0], tt.field, tt.says)
			}
		})
	}
}

// TestDriverPlanCommands is the exact package-manager commands per family and
// flavor, for an image root (no driver loaded, one kernel under /lib/modules).
func TestDriverPlanCommands(t *testing.T) {
	const nvidiaRepos = "https://developer.download.nvidia.com/compute/cuda/repos/"
	tests := []struct {
		description string
		osRelease   string
		kernel      string
		cfg         DriverConfig
		planTime    []string // commands Plan runs to look
		changes     [][]string
	}{
		{
			description: "Ubuntu 24.04, open modules: the -server-open headless packages from Ubuntu's archive, held",
			osRelease:   "ubuntu-24.04", kernel: "6.8.0-1015-aws",
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{{
				"env DEBIAN_FRONTEND=noninteractive apt-get update",
				"check",
				"env DEBIAN_FRONTEND=noninteractive apt-get install -y linux-headers-6.8.0-1015-aws nvidia-headless-580-server-open nvidia-utils-580-server",
				"apt-mark hold nvidia-headless-580-server-open nvidia-utils-580-server",
			}},
		},
		{
			description: "Ubuntu 22.04, proprietary modules: the -server headless packages",
			osRelease:   "ubuntu-22.04", kernel: "5.15.0-1072-aws",
			cfg: DriverConfig{Branch: "535", KernelModules: "proprietary"},
			changes: [][]string{{
				"env DEBIAN_FRONTEND=noninteractive apt-get update",
				"check",
				"env DEBIAN_FRONTEND=noninteractive apt-get install -y linux-headers-5.15.0-1072-aws nvidia-headless-535-server nvidia-utils-535-server",
				"apt-mark hold nvidia-headless-535-server nvidia-utils-535-server",
			}},
		},
		{
			description: "Debian 12, open modules: cuda-keyring, then the pinning package before nvidia-open",
			osRelease:   "debian-12", kernel: "6.1.0-28-amd64",
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y ca-certificates curl",
					"curl -fsSL -o /tmp/cuda-keyring_1.1-1_all.deb " + nvidiaRepos + "debian12/x86_64/cuda-keyring_1.1-1_all.deb",
					"dpkg -i /tmp/cuda-keyring_1.1-1_all.deb",
				},
				{
					"check",
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"check",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-driver-pinning-580",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades linux-headers-6.1.0-28-amd64 nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1",
					"check",
				},
			},
		},
		{
			description: "Debian 12, proprietary modules: cuda-drivers under the pinning package",
			osRelease:   "debian-12", kernel: "6.1.0-28-amd64",
			cfg: DriverConfig{Branch: "575", KernelModules: "proprietary"},
			changes: [][]string{
				{
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y ca-certificates curl",
					"curl -fsSL -o /tmp/cuda-keyring_1.1-1_all.deb " + nvidiaRepos + "debian12/x86_64/cuda-keyring_1.1-1_all.deb",
					"dpkg -i /tmp/cuda-keyring_1.1-1_all.deb",
				},
				{
					"check",
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"check",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-driver-pinning-575",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades linux-headers-6.1.0-28-amd64 cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1",
					"check",
				},
			},
		},
		{
			description: "Debian 12, a branch before the pinning packages: the stack locked by the step's apt preferences file",
			osRelease:   "debian-12", kernel: "6.1.0-28-amd64",
			cfg: DriverConfig{Branch: "550", KernelModules: "proprietary"},
			changes: [][]string{
				{
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y ca-certificates curl",
					"curl -fsSL -o /tmp/cuda-keyring_1.1-1_all.deb " + nvidiaRepos + "debian12/x86_64/cuda-keyring_1.1-1_all.deb",
					"dpkg -i /tmp/cuda-keyring_1.1-1_all.deb",
				},
				{
					"check",
					"env DEBIAN_FRONTEND=noninteractive apt-get update",
					"check",
					"write " + aptLockPath,
					"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades linux-headers-6.1.0-28-amd64 cuda-drivers nvidia-kernel-dkms nvidia-driver libnvidia-ml1",
					"check",
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			h, runner := osReleaseHost(t, tt.osRelease)
			h.GPUs = driverlessGPUs(t, a100)
			if err := os.MkdirAll(h.Path("/lib/modules/"+tt.kernel), 0o755); err != nil {
				t.Fatal(err)
			}
			step := driverStep{cfg: tt.cfg, arch: "amd64"}
			changes, err := step.Plan(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "changes", changeCommands(changes), tt.changes)
			if got := commandLines(runner.Calls); strings.Join(got, "\n") != strings.Join(tt.planTime, "\n") {
				t.Errorf("plan ran %q, want %q", got, tt.planTime)
			}
			for _, c := range changes {
				for _, cmd := range commandsOf(c) {
					if cmd.Root != h.Root {
						t.Errorf("%s runs with Root %q, want the image root (chroot)", cmd, cmd.Root)
					}
				}
			}
			last := changes[len(changes)-1]
			if !strings.Contains(last.Note, "loads when the image boots") {
				t.Errorf("install note = %q, want it to say the driver loads at boot", last.Note)
			}
		})
	}
}

func TestDriverPlanNoChangesWhenBranchRuns(t *testing.T) {
	h, runner := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100()) // driver 550.54.15
	changes, err := driverStep{cfg: DriverConfig{Branch: "550"}, arch: "amd64"}.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 0 {
		t.Errorf("branch 550 runs, yet the plan has %d changes: %v", len(changes), changeCommands(changes))
	}
	if len(runner.Calls) != 0 {
		t.Errorf("plan ran %v", runner.Lines())
	}
}

// ubuntuDpkgStatus is a dpkg status file with the given packages installed.
func ubuntuDpkgStatus(entries ...[3]string) string {
	var b strings.Builder
	for _, e := range entries { // name, want, version
		b.WriteString("Package: " + e[0] + "\nStatus: " + e[1] + " ok installed\nPriority: optional\nArchitecture: amd64\nVersion: " + e[2] + "\nDescription: NVIDIA headless metapackage\n Multi-line description.\n\n")
	}
	return b.String()
}

func TestDriverPlanPinsARunningUnheldBranch(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100())
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-headless-550-server-open", "install", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-utils-550-server", "install", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-dkms-550-server-open", "install", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"libnvidia-compute-550-server", "install", "550.54.15-0ubuntu0.24.04.1"},
	), 0o644)
	step := driverStep{cfg: DriverConfig{Branch: "550"}, arch: "amd64"}
	changes, err := step.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changeCommands(changes), [][]string{{"apt-mark hold nvidia-headless-550-server-open nvidia-utils-550-server"}})

	// Held: nothing left to do.
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-headless-550-server-open", "hold", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-utils-550-server", "hold", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-dkms-550-server-open", "install", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"libnvidia-compute-550-server", "install", "550.54.15-0ubuntu0.24.04.1"},
	), 0o644)
	changes, err = step.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 0 {
		t.Errorf("held and running, yet %v", changeCommands(changes))
	}
}

func TestDriverPlanReplacesARunningBranch(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100()) // 550.54.15 runs
	writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
		[3]string{"nvidia-headless-550-server-open", "hold", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-utils-550-server", "hold", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"nvidia-dkms-550-server-open", "install", "550.54.15-0ubuntu0.24.04.1"},
		[3]string{"libnvidia-compute-550-server", "install", "550.54.15-0ubuntu0.24.04.1"},
	), 0o644)
	changes, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changeCommands(changes), [][]string{
		{"apt-mark unhold nvidia-headless-550-server-open nvidia-utils-550-server"},
		{
			"env DEBIAN_FRONTEND=noninteractive apt-get update",
			"check",
			// The 550 stack goes in the same transaction: no mixed stack.
			"env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-headless-580-server-open nvidia-utils-580-server libnvidia-compute-550-server- nvidia-dkms-550-server-open- nvidia-headless-550-server-open- nvidia-utils-550-server-",
			"apt-mark hold nvidia-headless-580-server-open nvidia-utils-580-server",
		},
	})
	if !strings.Contains(changes[1].Summary, "driver stack on branch 550 (libnvidia-compute-550-server 550.54.15-0ubuntu0.24.04.1, nvidia-dkms-550-server-open 550.54.15-0ubuntu0.24.04.1), asked 580") {
		t.Errorf("summary %q does not tell the installed stack", changes[1].Summary)
	}
	if note := changes[1].Note; !strings.Contains(note, "550.54.15") || !strings.Contains(note, "reboot") {
		t.Errorf("note = %q, want it to say 550.54.15 runs until a reboot", note)
	}
}

func TestDriverPlanInstalledImageIsUpToDate(t *testing.T) {
	t.Run("Ubuntu packages installed and held", func(t *testing.T) {
		h, _ := osReleaseHost(t, "ubuntu-24.04")
		h.GPUs = driverlessGPUs(t)
		writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
			[3]string{"nvidia-headless-580-server-open", "hold", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"nvidia-utils-580-server", "hold", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"nvidia-dkms-580-server-open", "install", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"libnvidia-compute-580-server", "install", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"nvidia-dkms-580-server-open", "install", "580.95.05-0ubuntu0.24.04.2"},
			[3]string{"libnvidia-compute-580-server", "install", "580.95.05-0ubuntu0.24.04.2"},
		), 0o644)
		changes, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
		if err != nil || len(changes) != 0 {
			t.Errorf("plan = %v, %v; want no changes", changeCommands(changes), err)
		}
	})
	t.Run("Debian: the pinning package and nvidia-open installed", func(t *testing.T) {
		h, _ := osReleaseHost(t, "debian-12")
		h.GPUs = driverlessGPUs(t)
		writeTarget(t, h, cudaKeyringPath, "key", 0o644)
		writeTarget(t, h, dpkgStatusPath, ubuntuDpkgStatus(
			[3]string{"nvidia-driver-pinning-580", "install", "580-1"},
			[3]string{"nvidia-open", "install", "580.95.05-1"},
			[3]string{"nvidia-kernel-open-dkms", "install", "580.95.05-1"},
			[3]string{"nvidia-driver", "install", "580.95.05-1"},
			[3]string{"libnvidia-ml1", "install", "580.95.05-1"},
		), 0o644)
		changes, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
		if err != nil || len(changes) != 0 {
			t.Errorf("plan = %v, %v; want no changes", changeCommands(changes), err)
		}
	})
}

func TestDriverPlanRejectsUbuntuTransitionalPackage(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, dpkgStatusPath, "Package: nvidia-headless-565-server-open\nStatus: install ok installed\nVersion: 565.57.01-0ubuntu0.24.04.4\nDescription: NVIDIA headless metapackage (transitional package)\n", 0o644)
	_, err := driverStep{cfg: DriverConfig{Branch: "565"}, arch: "amd64"}.Plan(context.Background(), h)
	if err == nil || !strings.Contains(err.Error(), "transitional") || !strings.Contains(err.Error(), "driver.branch") {
		t.Errorf("err = %v, want it to explain the transitional package and name driver.branch", err)
	}
}

func TestDriverPlanUnsupportedOS(t *testing.T) {
	h, _ := osReleaseHost(t, "amzn-2")
	h.GPUs = driverlessGPUs(t, a100)
	_, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
	var unsupported *UnsupportedOSError
	if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), "Amazon Linux 2023") {
		t.Errorf("err = %v, want an UnsupportedOSError pointing at Amazon Linux 2023", err)
	}
}

func TestDriverPlanBranchValidation(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	h.GPUs = driverlessGPUs(t)
	_, err := driverStep{cfg: DriverConfig{Branch: "58O"}, arch: "amd64"}.Plan(context.Background(), h)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "driver.branch" {
		t.Errorf("err = %v, want a FieldError on driver.branch", err)
	}
}

func TestDriverPlanChecksTheFlavorAgainstTheGPUs(t *testing.T) {
	v100 := pciFunction{address: "0000:3b:00.0", device: "1db4", class: "030200"}
	b200 := pciFunction{address: "0000:1b:00.0", device: "2901", class: "030200"}
	tests := []struct {
		description string
		gpus        func(t *testing.T) nvml.Library
		cfg         DriverConfig
		says        string // "" when the plan is fine
	}{
		{"open modules on a V100 (no driver, PCI 0x1db4) are refused", func(t *testing.T) nvml.Library { return driverlessGPUs(t, v100) }, DriverConfig{Branch: "580"}, "older than Turing"},
		{"proprietary modules on a V100 are fine", func(t *testing.T) nvml.Library { return driverlessGPUs(t, v100) }, DriverConfig{Branch: "580", KernelModules: "proprietary"}, ""},
		{"open modules on an A100 are fine", func(t *testing.T) nvml.Library { return driverlessGPUs(t, a100) }, DriverConfig{Branch: "580"}, ""},
		{"proprietary modules on a B200 are refused", func(t *testing.T) nvml.Library { return driverlessGPUs(t, b200) }, DriverConfig{Branch: "580", KernelModules: "proprietary"}, "Blackwell"},
		{
			"open modules where NVML reports Volta GPUs are refused",
			func(t *testing.T) nvml.Library {
				fleet := nvmltest.NewDGXA100()
				for _, d := range fleet.Server.Devices {
					nvmltest.Mock(d).Architecture = gonvml.DEVICE_ARCH_VOLTA
				}
				return dgxGPUs(t, fleet)
			},
			DriverConfig{Branch: "580"}, "Volta",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			h, _ := osReleaseHost(t, "ubuntu-24.04")
			h.GPUs = tt.gpus(t)
			_, err := driverStep{cfg: tt.cfg, arch: "amd64"}.Plan(context.Background(), h)
			if tt.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "driver.kernel_modules" || !strings.Contains(fe.Problem, tt.says) {
				t.Errorf("err = %v, want a FieldError on driver.kernel_modules saying %q", err, tt.says)
			}
		})
	}
}

func TestLoadChangeOnARunningMachine(t *testing.T) {
	cfg := DriverConfig{Branch: "580"}
	withGPU := nvml.Snapshot{PCI: []nvml.PCIDevice{{Address: "0000:07:00.0", DeviceID: "20b0", Class: "0302"}}}
	load := loadChange(withGPU, cfg)
	if load == nil || len(commandsOf(*load)) != 1 || commandsOf(*load)[0].String() != "modprobe nvidia" || commandsOf(*load)[0].Root != "/" {
		t.Fatalf("load change = %+v, want modprobe nvidia on /", load)
	}

	withNouveau := nvml.Snapshot{PCI: []nvml.PCIDevice{{Address: "0000:07:00.0", DeviceID: "20b0", Class: "0302", Driver: "nouveau"}}}
	load = loadChange(withNouveau, cfg)
	if load == nil || commandsOf(*load) != nil || !strings.Contains(load.Note, "reboot") {
		t.Errorf("with nouveau bound: %+v, want a reboot note and no modprobe", load)
	}

	if load := loadChange(nvml.Snapshot{}, cfg); load != nil {
		t.Errorf("without a GPU: %+v, want nothing (modprobe nvidia fails without one)", load)
	}
}

func TestParseDpkgStatus(t *testing.T) {
	status, err := parseDpkgStatus([]byte(ubuntuDpkgStatus(
		[3]string{"nvidia-utils-580-server", "hold", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"nvidia-dkms-580-server-open", "install", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"libnvidia-compute-580-server", "install", "580.95.05-0ubuntu0.24.04.2"},
		[3]string{"nvidia-headless-580-server-open", "install", "580.95.05-0ubuntu0.24.04.2"},
	) + "Package: nvidia-utils-550-server\nStatus: hold ok installed\nVersion: 550.163.01-0ubuntu0.24.04.1\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := status["nvidia-utils-580-server"]
	if !p.Installed() || !p.Held() || p.Version != "580.95.05-0ubuntu0.24.04.2" || branchOf(p.Version) != "580" {
		t.Errorf("parsed %+v", p)
	}
	if got := status.heldExcept(ubuntuDriverPackagePrefixes, []string{"nvidia-utils-580-server"}); strings.Join(got, ",") != "nvidia-utils-550-server" {
		t.Errorf("other held = %v", got)
	}

	_, err = parseDpkgStatus([]byte("Package: x\nStatus: install ok\n"))
	var parseErr *ParseError
	if !errors.As(err, &parseErr) || parseErr.Line != 2 {
		t.Errorf("err = %v, want a ParseError on line 2", err)
	}
}

func TestDriverPlanSkipsTheRepositoryWhenPresent(t *testing.T) {
	h, _ := osReleaseHost(t, "debian-12")
	h.GPUs = driverlessGPUs(t, a100)
	writeTarget(t, h, cudaKeyringPath, "key", 0o644)
	changes, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "arm64"}.Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changeCommands(changes), [][]string{{
		"check",
		"env DEBIAN_FRONTEND=noninteractive apt-get update",
		"check",
		"env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-driver-pinning-580",
		"env DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades nvidia-open nvidia-kernel-open-dkms nvidia-driver libnvidia-ml1",
		"check",
	}})
}

func TestDriverPlanRunningBranchOnAnUnknownSystem(t *testing.T) {
	h, _ := newTestHost(t) // no os-release at all
	h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100())
	changes, err := driverStep{cfg: DriverConfig{Branch: "550"}, arch: "amd64"}.Plan(context.Background(), h)
	if err != nil || len(changes) != 0 {
		t.Errorf("plan = %v, %v; want nothing to do where branch 550 runs", changeCommands(changes), err)
	}
	_, err = driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
	if err == nil || !strings.Contains(err.Error(), "/etc/os-release") {
		t.Errorf("installing 580 without an os-release: err = %v", err)
	}
}

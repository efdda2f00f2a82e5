package bootstrap

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The dnf packaging's commands, recorded. What they do to a real rpm
// database is tested against real dnf in realdnf_*_test.go.

// rpmStackQuery is the plan's one question to rpm.
const rpmStackQuery = `rpm -qa --queryformat "[%{=NAME}\t%{=EPOCHNUM}:%{=VERSION}-%{=RELEASE}\t%{PROVIDENAME}\n]"`

// rpmInstalled is what rpmStackQuery prints for packages given as
// "name epoch:version-release provide provide…" (each package provides its
// own name too).
func rpmInstalled(pkgs ...string) Output {
	var b strings.Builder
	for _, p := range pkgs {
		f := strings.Fields(p)
		for _, provide := range append([]string{f[0]}, f[2:]...) {
			b.WriteString(f[0] + "\t" + f[1] + "\t" + provide + "\n")
		}
	}
	return Output{Stdout: []byte(b.String())}
}

// openStack580 is branch 580's open stack as NVIDIA's rhel9 repository
// installs it with nvidia-open.
var openStack580 = []string{
	"nvidia-driver 3:580.95.05-1.el9 nvidia-driver(x86-64)",
	"libnvidia-ml 3:580.95.05-1.el9 libnvidia-ml.so.1()(64bit)",
	"kmod-nvidia-open-dkms 3:580.95.05-1.el9 nvidia-kmod",
	"nvidia-kmod-common 3:580.95.05-1.el9",
	"nvidia-open 3:580.95.05-1.el9",
}

const nvidiaRPMRepos = "https://developer.download.nvidia.com/compute/cuda/repos/"

func TestDriverPlanDNFCommands(t *testing.T) {
	tests := []struct {
		description string
		osRelease   string
		kernel      string
		cfg         DriverConfig
		changes     [][]string
	}{
		{
			description: "Amazon Linux 2023, open modules: the CUDA repository, kernel packages, the 580-open stream, nvidia-open",
			osRelease:   "amzn-2023", kernel: "6.1.115-126.197.amzn2023.x86_64",
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{"dnf config-manager --add-repo " + nvidiaRPMRepos + "amzn2023/x86_64/cuda-amzn2023.repo"},
				{"dnf -y install kernel-devel-6.1.115-126.197.amzn2023.x86_64 kernel-headers-6.1.115-126.197.amzn2023.x86_64 kernel-modules-extra-6.1.115-126.197.amzn2023.x86_64 kernel-modules-extra-common-6.1.115-126.197.amzn2023.x86_64"},
				{
					"dnf -y module enable nvidia-driver:580-open",
					"dnf -y install --allowerasing nvidia-open",
				},
			},
		},
		{
			description: "Amazon Linux 2023 on the 6.12 kernel, proprietary 570: kernel6.12 packages and dnf module install",
			osRelease:   "amzn-2023", kernel: "6.12.40-63.114.amzn2023.x86_64",
			cfg: DriverConfig{Branch: "570", KernelModules: "proprietary"},
			changes: [][]string{
				{"dnf config-manager --add-repo " + nvidiaRPMRepos + "amzn2023/x86_64/cuda-amzn2023.repo"},
				{"dnf -y install kernel6.12-devel-6.12.40-63.114.amzn2023.x86_64 kernel6.12-headers-6.12.40-63.114.amzn2023.x86_64 kernel6.12-modules-extra-6.12.40-63.114.amzn2023.x86_64 kernel6.12-modules-extra-common-6.12.40-63.114.amzn2023.x86_64"},
				{
					"dnf -y module enable nvidia-driver:570-dkms",
					"dnf -y module install nvidia-driver:570-dkms",
				},
			},
		},
		{
			description: "RHEL 9, open modules: CUDA repository, EPEL from Fedora's servers, the 580-open stream",
			osRelease:   "rhel-9", kernel: "5.14.0-427.13.1.el9_4.x86_64",
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{"dnf config-manager --add-repo " + nvidiaRPMRepos + "rhel9/x86_64/cuda-rhel9.repo"},
				{"dnf -y install https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"},
				{"dnf -y install kernel-devel-5.14.0-427.13.1.el9_4.x86_64 kernel-headers-5.14.0-427.13.1.el9_4.x86_64"},
				{
					"dnf -y module enable nvidia-driver:580-open",
					"dnf -y install --allowerasing nvidia-open",
				},
			},
		},
		{
			description: "RHEL 10, open modules: the rhel10 repository, EPEL 10, the versionlock plugin, then the lock and nvidia-open",
			osRelease:   "rhel-10", kernel: "6.12.0-55.12.1.el10_0.x86_64",
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{"dnf config-manager --add-repo " + nvidiaRPMRepos + "rhel10/x86_64/cuda-rhel10.repo"},
				{"dnf -y install https://dl.fedoraproject.org/pub/epel/epel-release-latest-10.noarch.rpm"},
				{"dnf -y install kernel-devel-6.12.0-55.12.1.el10_0.x86_64 kernel-headers-6.12.0-55.12.1.el10_0.x86_64"},
				{"dnf -y install python3-dnf-plugin-versionlock"},
				{"write " + dnfVersionlockListPath, "dnf -y install --allowerasing nvidia-open", "check"},
			},
		},
		{
			description: "Rocky Linux 9, proprietary 550: epel-release from the distribution, dnf module install",
			osRelease:   "rocky-9", kernel: "5.14.0-427.13.1.el9_4.x86_64",
			cfg: DriverConfig{Branch: "550", KernelModules: "proprietary"},
			changes: [][]string{
				{"dnf config-manager --add-repo " + nvidiaRPMRepos + "rhel9/x86_64/cuda-rhel9.repo"},
				{"dnf -y install epel-release"},
				{"dnf -y install kernel-devel-5.14.0-427.13.1.el9_4.x86_64 kernel-headers-5.14.0-427.13.1.el9_4.x86_64"},
				{
					"dnf -y module enable nvidia-driver:550-dkms",
					"dnf -y module install nvidia-driver:550-dkms",
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
			changes, err := driverStep{cfg: tt.cfg, arch: "amd64"}.Plan(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "changes", changeCommands(changes), tt.changes)
			if got := commandLines(runner.Calls); len(got) != 1 || got[0] != rpmStackQuery {
				t.Errorf("plan ran %q, want only %q", got, rpmStackQuery)
			}
			for _, c := range changes {
				for _, cmd := range commandsOf(c) {
					if cmd.Root != h.Root {
						t.Errorf("%s runs with Root %q, want the image root (chroot)", cmd, cmd.Root)
					}
				}
			}
		})
	}
}

// dnfHost is an Amazon Linux 2023 image root with NVIDIA's repository set
// up, the given module state, and rpm answering with the given packages.
func dnfHost(t *testing.T, moduleState string, installed ...string) *Host {
	t.Helper()
	h, runner := osReleaseHost(t, "amzn-2023")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, "/etc/yum.repos.d/cuda-amzn2023.repo", "[cuda-amzn2023-x86_64]\n", 0o644)
	if moduleState != "" {
		writeTarget(t, h, dnfModuleStatePath, moduleState, 0o644)
	}
	runner.Reply("rpm -qa", rpmInstalled(installed...))
	return h
}

func moduleState(stream string) string {
	return "[nvidia-driver]\nname=nvidia-driver\nstream=" + stream + "\nprofiles=\nstate=enabled\n"
}

func TestDriverPlanDNFStack(t *testing.T) {
	const kernelPkgs = "dnf -y install kernel-devel kernel-headers kernel-modules-extra kernel-modules-extra-common"
	tests := []struct {
		description string
		stream      string // enabled stream, "" for none
		installed   []string
		cfg         DriverConfig
		changes     [][]string
	}{
		{
			description: "the whole stack on the branch under its stream is up to date",
			stream:      "580-open", installed: openStack580,
			cfg: DriverConfig{Branch: "580"},
		},
		{
			description: "the stack on the branch without its stream gets the stream, by switch-to",
			installed:   openStack580,
			cfg:         DriverConfig{Branch: "580"},
			changes:     [][]string{{"dnf -y module switch-to nvidia-driver:580-open --allowerasing"}},
		},
		{
			description: "another stream enabled and nothing installed: switch-to, then nvidia-open",
			stream:      "550-dkms",
			cfg:         DriverConfig{Branch: "580"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:580-open --allowerasing", "dnf -y install --allowerasing nvidia-open"},
			},
		},
		{
			description: "branch down, 580 to 570: switch-to moves the whole stack, then the 570 profile",
			stream:      "580-open", installed: openStack580,
			cfg: DriverConfig{Branch: "570"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:570-open --allowerasing", "dnf -y module install nvidia-driver:570-open"},
			},
		},
		{
			description: "branch down across 560: the profile brings nvidia-driver-NVML, then 580's libnvidia-ml, in no 550 stream, goes",
			stream:      "580-open", installed: openStack580,
			cfg: DriverConfig{Branch: "550", KernelModules: "proprietary"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:550-dkms --allowerasing", "dnf -y module install nvidia-driver:550-dkms", "dnf -y remove libnvidia-ml"},
			},
		},
		{
			description: "flavor switch, open to proprietary on the same branch",
			stream:      "580-open", installed: openStack580,
			cfg: DriverConfig{Branch: "580", KernelModules: "proprietary"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:580-dkms --allowerasing", "dnf -y install --allowerasing cuda-drivers"},
			},
		},
		{
			description: "the right stream over a stack of another branch is no pin: switch-to syncs the stack",
			stream:      "580-open",
			installed: []string{
				"nvidia-driver 3:570.195.03-1.el9",
				"libnvidia-ml 3:570.195.03-1.el9 libnvidia-ml.so.1()(64bit)",
				"kmod-nvidia-open-dkms 3:570.195.03-1.el9 nvidia-kmod",
				"nvidia-open 3:570.195.03-1.el9",
			},
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:580-open --allowerasing", "dnf -y install --allowerasing nvidia-open"},
			},
		},
		{
			description: "a mixed stack (NVML library of 590 under a 580 driver) is not branch 580",
			stream:      "580-open",
			installed: []string{
				"nvidia-driver 3:580.95.05-1.el9",
				"libnvidia-ml 3:590.44.01-1.el9 libnvidia-ml.so.1()(64bit)",
				"kmod-nvidia-open-dkms 3:580.95.05-1.el9 nvidia-kmod",
				"nvidia-open 3:580.95.05-1.el9",
			},
			cfg: DriverConfig{Branch: "580"},
			changes: [][]string{
				{kernelPkgs},
				{"dnf -y module switch-to nvidia-driver:580-open --allowerasing", "dnf -y install --allowerasing nvidia-open"},
			},
		},
		{
			description: "the older packaging's NVML package (nvidia-driver-NVML) counts by its library",
			stream:      "550-dkms",
			installed: []string{
				"nvidia-driver 3:550.163.01-1.el9",
				"nvidia-driver-NVML 3:550.163.01-1.el9 libnvidia-ml.so.1()(64bit)",
				"kmod-nvidia-latest-dkms 3:550.163.01-1.el9 nvidia-kmod",
			},
			cfg: DriverConfig{Branch: "550", KernelModules: "proprietary"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			state := ""
			if tt.stream != "" {
				state = moduleState(tt.stream)
			}
			h := dnfHost(t, state, tt.installed...)
			changes, err := driverStep{cfg: tt.cfg, arch: "amd64"}.Plan(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "changes", changeCommands(changes), tt.changes)
		})
	}
}

func TestDriverPlanDNFWithTheBranchRunning(t *testing.T) {
	const running = "550" // nvmltest's DGX A100 runs 550.54.15
	cfg := DriverConfig{Branch: running, KernelModules: "proprietary"}
	stack550 := func(nvml string) []string {
		return []string{
			"nvidia-driver 3:550.54.15-1.el9",
			"nvidia-driver-NVML " + nvml + " libnvidia-ml.so.1()(64bit)",
			"kmod-nvidia-latest-dkms 3:550.54.15-1.el9 nvidia-kmod",
		}
	}
	t.Run("no package of the stack (a runfile's driver) is left alone", func(t *testing.T) {
		h := dnfHost(t, "")
		h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100())
		changes, err := driverStep{cfg: cfg, arch: "amd64"}.Plan(context.Background(), h)
		if err != nil || len(changes) != 0 {
			t.Errorf("plan = %v, %v; want nothing", changeCommands(changes), err)
		}
	})
	t.Run("the whole stack under its stream is up to date", func(t *testing.T) {
		h := dnfHost(t, moduleState("550-dkms"), stack550("3:550.54.15-1.el9")...)
		h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100())
		changes, err := driverStep{cfg: cfg, arch: "amd64"}.Plan(context.Background(), h)
		if err != nil || len(changes) != 0 {
			t.Errorf("plan = %v, %v; want nothing", changeCommands(changes), err)
		}
	})
	t.Run("a stack left mixed under the running branch is moved back whole", func(t *testing.T) {
		h := dnfHost(t, moduleState("550-dkms"), stack550("3:570.195.03-1.el9")...)
		h.GPUs = dgxGPUs(t, nvmltest.NewDGXA100())
		changes, err := driverStep{cfg: cfg, arch: "amd64"}.Plan(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		last := changeCommands(changes)
		if len(last) == 0 || !strings.Contains(strings.Join(last[len(last)-1], "\n"), "module switch-to nvidia-driver:550-dkms") {
			t.Errorf("plan = %v, want the stack moved back to 550-dkms", last)
		}
	})
}

func TestDriverPlanDNFRefusesAVersionlockOnAnotherBranch(t *testing.T) {
	h := dnfHost(t, "")
	writeTarget(t, h, dnfVersionlockListPath, "# Added lock on Mon Nov 23 2026\nkmod-nvidia-open-dkms-3:575.51-1.fc41.*\nnvidia-container-toolkit-0:1.17.8-1.*\n", 0o644)
	_, err := driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}.Plan(context.Background(), h)
	if err == nil || !strings.Contains(err.Error(), dnfVersionlockListPath) || !strings.Contains(err.Error(), "kmod-nvidia-open-dkms-3:575.51-1.fc41.*") || !strings.Contains(err.Error(), "driver.branch") {
		t.Fatalf("err = %v, want the lock's file, entry and driver.branch named", err)
	}
	if strings.Contains(err.Error(), "nvidia-container-toolkit") {
		t.Errorf("err = %v names the toolkit's lock, which holds no driver branch", err)
	}

	writeTarget(t, h, dnfVersionlockListPath, "kmod-nvidia-open-dkms-3:580.95.05-1.el9.*\n", 0o644)
	if _, err := (driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}).Plan(context.Background(), h); err != nil {
		t.Errorf("a lock on the configured branch: err = %v, want none", err)
	}
}

package bootstrap

import (
	"strings"
	"testing"
)

// Branch and flavor moves on Rocky Linux 9 with real dnf: each apply must
// leave exactly the configured branch's stack installed, the configured
// stream enabled, and a plan with nothing left to do.

// openStack and dkmsStack are a release's packages as the driver step
// installs them: after 570 through nvidia-open / cuda-drivers, up to 570
// through the stream's default profile.
func openStack(version, dist string) []string {
	names := []string{"nvidia-driver", "nvidia-driver-cuda-libs", "libnvidia-ml", "nvidia-kmod-common", "kmod-nvidia-open-dkms", "nvidia-open"}
	return rpmNames(version, dist, names...)
}

func dkmsStack(version, dist string) []string {
	nvml := "libnvidia-ml"
	if strings.HasPrefix(version, "550.") {
		nvml = "nvidia-driver-NVML"
	}
	names := []string{"nvidia-driver", "nvidia-driver-cuda-libs", nvml, "nvidia-kmod-common", "kmod-nvidia-latest-dkms", "cuda-drivers"}
	return rpmNames(version, dist, names...)
}

func TestRealDNFBranchAndFlavorMoves(t *testing.T) {
	b := newDNFTestbed(t, rocky9)

	steps := []struct {
		description string
		cfg         DriverConfig
		stream      string
		stack       []string
	}{
		{
			description: "fresh install of 570, open: the stream's default profile",
			cfg:         DriverConfig{Branch: "570"},
			stream:      "570-open",
			stack:       openStack("570.195.03", "el9"),
		},
		{
			description: "branch up to 580: switch-to moves the stack to 580's newest release",
			cfg:         DriverConfig{Branch: "580"},
			stream:      "580-open",
			stack:       openStack("580.105.08", "el9"),
		},
		{
			description: "flavor switch to proprietary on 580: the kernel module and metapackage change, nothing else",
			cfg:         DriverConfig{Branch: "580", KernelModules: KernelModulesProprietary},
			stream:      "580-dkms",
			stack:       dkmsStack("580.105.08", "el9"),
		},
		{
			description: "branch down to 550, proprietary: the whole stack moves down, NVML back in nvidia-driver-NVML",
			cfg:         DriverConfig{Branch: "550", KernelModules: KernelModulesProprietary},
			stream:      "550-dkms",
			stack:       dkmsStack("550.163.01", "el9"),
		},
	}
	for _, step := range steps {
		if !t.Run(step.description, func(t *testing.T) {
			out := b.mustApply(t, step.cfg)
			b.wantStack(t, step.cfg, step.stream, step.stack...)
			if t.Failed() {
				t.Logf("apply output:\n%s", out)
			}
		}) {
			return // the next move starts from this one's result
		}
	}

	t.Run("re-apply changes nothing", func(t *testing.T) {
		last := steps[len(steps)-1]
		out := b.mustApply(t, last.cfg)
		if !strings.Contains(out, "No changes") {
			t.Errorf("re-apply output:\n%s\nwant no changes", out)
		}
		b.wantStack(t, last.cfg, last.stream, last.stack...)
	})
}

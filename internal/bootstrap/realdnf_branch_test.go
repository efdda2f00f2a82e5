package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// Branch and flavor moves on Rocky Linux 9 with real dnf, over the
// branches NVIDIA publishes in late 2026 — long-term 580 and 620,
// production 595, end-of-life 535 — and the older 550 and 570: each apply
// must leave exactly the configured branch's stack installed, the
// configured stream enabled, and a plan with nothing left to do; the plan
// for the end-of-life branch warns.

// openStack and dkmsStack are a release's packages as the driver step
// installs them: after 570 through nvidia-open / cuda-drivers, up to 570
// through the stream's default profile.
func openStack(version, dist string) []string {
	names := []string{"nvidia-driver", "nvidia-driver-cuda-libs", "libnvidia-ml", "nvidia-kmod-common", "kmod-nvidia-open-dkms", "nvidia-open"}
	return rpmNames(version, dist, names...)
}

func dkmsStack(version, dist string) []string {
	nvml := "libnvidia-ml"
	if strings.HasPrefix(version, "550.") || strings.HasPrefix(version, "535.") {
		nvml = "nvidia-driver-NVML"
	}
	names := []string{"nvidia-driver", "nvidia-driver-cuda-libs", nvml, "nvidia-kmod-common", "kmod-nvidia-latest-dkms", "cuda-drivers"}
	return rpmNames(version, dist, names...)
}

// dnfBranchTestToday is the day the real-dnf branch test plans on: NVIDIA's lifecycle
// then has 535 past its end of life (June 2026), 580 and 620 long-term,
// 595 production (driver_lifecycle.go).
var dnfBranchTestToday = time.Date(2026, time.November, 27, 12, 0, 0, 0, time.UTC)

// The releases of the rocky9 branch test: the default model's, and the
// branches NVIDIA publishes in late 2026 (nvrepo rpm_cuda.go).
var lifecycleRPMVersions = append(append([]string{}, nvrepo.DefaultCUDARPMVersions...),
	nvrepo.EOLRelease535, nvrepo.ProductionRelease595, nvrepo.LTSRelease620)

func TestRealDNFBranchAndFlavorMoves(t *testing.T) {
	b := newDNFTestbed(t, rocky9, lifecycleRPMVersions...)
	b.host.Now = func() time.Time { return dnfBranchTestToday }

	steps := []struct {
		description string
		cfg         DriverConfig
		stream      string
		stack       []string
		warning     []string // what the plan's warning says, if it warns
	}{
		{
			description: "fresh install of 570, open: the stream's default profile",
			cfg:         DriverConfig{Branch: "570"},
			stream:      "570-open",
			stack:       openStack("570.195.03", "el9"),
			warning:     []string{"branch 570 reached its end of life in February 2026", "nearest supported branch is 595"},
		},
		{
			description: "branch up to 580 (long-term): switch-to moves the stack to 580's newest release",
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
			warning:     []string{"branch 550 is past its end of life"},
		},
		{
			description: "branch down to 535 (end of life June 2026), proprietary: the plan warns, the install goes ahead",
			cfg:         DriverConfig{Branch: "535", KernelModules: KernelModulesProprietary},
			stream:      "535-dkms",
			stack:       dkmsStack(nvrepo.EOLRelease535, "el9"),
			warning:     []string{"branch 535 reached its end of life in June 2026", "nearest supported branch is 580"},
		},
		{
			description: "branch up to 595 (production), open, across 560: nvidia-driver-NVML goes, libnvidia-ml comes",
			cfg:         DriverConfig{Branch: "595"},
			stream:      "595-open",
			stack:       openStack(nvrepo.ProductionRelease595, "el9"),
		},
		{
			description: "branch up to 620 (long-term, open modules only)",
			cfg:         DriverConfig{Branch: "620"},
			stream:      "620-open",
			stack:       openStack(nvrepo.LTSRelease620, "el9"),
		},
	}
	for _, step := range steps {
		if !t.Run(step.description, func(t *testing.T) {
			plan, err := MakePlan(context.Background(), b.host, []Step{driverStep{cfg: step.cfg, arch: "amd64"}})
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			warnings := strings.Join(plan[0].Warnings, "\n")
			for _, want := range step.warning {
				if !strings.Contains(warnings, want) {
					t.Errorf("plan warnings %q do not say %q", plan[0].Warnings, want)
				}
			}
			if len(step.warning) == 0 && warnings != "" {
				t.Errorf("plan warns %q for a supported branch", warnings)
			}
			out := b.mustApply(t, step.cfg)
			b.wantStack(t, step.cfg, step.stream, step.stack...)
			if t.Failed() {
				t.Logf("apply output:\n%s", out)
			}
		}) {
			return // the next move starts from this one's result
		}
	}

	t.Run("620 has no proprietary flavor: no -dkms stream, and the plan refuses before anything installs", func(t *testing.T) {
		out := chrootRun(t, b.root, "dnf", "-q", "module", "list", "nvidia-driver")
		if !strings.Contains(out, "620-open") || strings.Contains(out, "620-dkms") || !strings.Contains(out, "595-dkms") {
			t.Errorf("streams of the repository:\n%s\nwant 620-open and 595-dkms, no 620-dkms", out)
		}
		_, err := driverStep{cfg: DriverConfig{Branch: "620", KernelModules: KernelModulesProprietary}, arch: "amd64"}.Plan(context.Background(), b.host)
		if err == nil || !strings.Contains(err.Error(), "driver.kernel_modules") {
			t.Errorf("plan for 620 proprietary: err = %v, want an error on driver.kernel_modules", err)
		}
	})

	t.Run("re-apply changes nothing", func(t *testing.T) {
		last := steps[len(steps)-1]
		out := b.mustApply(t, last.cfg)
		if !strings.Contains(out, "No changes") {
			t.Errorf("re-apply output:\n%s\nwant no changes", out)
		}
		b.wantStack(t, last.cfg, last.stream, last.stack...)
	})
}

package bootstrap

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// TestRealAptDriverToday runs the driver step against real apt and dpkg in a
// Debian 12 and a Debian 13 root, each installing from a model of NVIDIA's
// repository for its release as it is in late 2026 (nvrepo.CUDADebian12Today,
// nvrepo.CUDADebian13Today): an end-of-life branch (535: the plan warns, and
// debian13 does not offer it), the long-term branches 580 and 620 (open
// kernel modules only), the production branch 595, moves across 590 both
// ways, and back from 620 to 615's proprietary modules. NVIDIA renamed only its Ubuntu packages at 590
// (driver_debian_names.go), so on Debian a move across 590 keeps the
// package names and swaps the pinning package. One root per release, moved
// from branch to branch; after every apply the root itself is judged (dpkg
// status, apt-cache policy, the locks) and a second plan must be empty.
func TestRealAptDriverToday(t *testing.T) {
	srv := nvrepo.Start(t)
	open, prop := openModules, proprietaryModules
	// The day the lifecycle is judged on: 535 (June 2026) is past its end
	// of life, 580, 595 and 620 are not.
	today := time.Date(2026, time.November, 27, 12, 0, 0, 0, time.UTC)

	node := func(t *testing.T, suite string, branches []nvrepo.CUDADebianBranch) *aptNode {
		repo := nvrepo.BuildCUDADebian(t, nvrepo.CUDADebianOptions{Release: aptSuiteRepo[suite], Branches: branches})
		n := newAptNodeOn(t, suite, srv, repo)
		n.h.Now = func() time.Time { return today }
		return n
	}
	step := (*aptNode).applyOnBranch

	t.Run("Debian 12", func(t *testing.T) {
		n := node(t, "bookworm", nvrepo.CUDADebian12Today)

		// 535 is past its end of life: the plan says so, the install goes
		// ahead, locked by the step's preferences file (535 has no
		// pinning package).
		n.assertEndOfLifeWarning(prop("535"))
		step(n, prop("535"))

		// To the long-term branch 580, open modules: the pinning package
		// takes over from the preferences file.
		step(n, open("580"))
		names580 := n.unbranchedNames()

		// Across 590 to the production branch 595 and back: the same
		// package names, the other branch's pinning package.
		for _, next := range []string{"595", "580"} {
			out := step(n, open(next))
			if !strings.Contains(out, "move the NVIDIA driver to branch "+next) {
				t.Errorf("apply to %s said:\n%s", next, out)
			}
			if got := n.unbranchedNames(); strings.Join(got, " ") != strings.Join(names580, " ") {
				t.Errorf("on %s the installed stack is %v, on 580 it was %v: Debian's names do not change at 590", next, got, names580)
			}
		}

		// To the long-term branch 620: open modules only.
		step(n, open("620"))
		if v, ok := n.installed()["cuda-drivers"]; ok {
			t.Errorf("cuda-drivers %s is installed on 620, which has none", v)
		}

		// Back to 615, the last branch with proprietary kernel modules
		// (for a pre-Turing GPU): a downgrade and a flavor switch at once.
		step(n, prop("615"))
		if v := n.installed()["cuda-drivers"]; branchOf(v) != "615" {
			t.Errorf("cuda-drivers is %q on 615 proprietary, want 615's", v)
		}
	})

	t.Run("Debian 13", func(t *testing.T) {
		n := node(t, "trixie", nvrepo.CUDADebian13Today)

		// A node upgraded from Debian 12: debian12's cuda-keyring, set up
		// as NVIDIA's guide has it, is still installed.
		old := nvrepo.BuildCUDADebian(t, nvrepo.CUDADebianOptions{Release: "debian12",
			Branches: []nvrepo.CUDADebianBranch{{Branch: "580", Versions: []string{"580.105.08-1"}, Pinning: true}}})
		srv.Mount(old.Address(), old.Dir())
		n.mustRun("curl", "-fsSL", "-o", "/tmp/cuda-keyring-debian12.deb", "https://"+old.Address()+"cuda-keyring_1.1-1_all.deb")
		n.mustRun("dpkg", "-i", "/tmp/cuda-keyring-debian12.deb")
		if _, text := n.plan(open("535")); !strings.Contains(text, "replace NVIDIA's CUDA apt repository of another Debian release (/etc/apt/sources.list.d/cuda-debian12-x86_64.list) with the one for debian13") {
			t.Errorf("the plan on a node with debian12's repository does not replace it:\n%s", text)
		}

		// 535 is past its end of life and debian13 does not offer it: the
		// plan warns, the apply swaps the repository and stops before any
		// lock or stack change.
		n.assertEndOfLifeWarning(open("535"))
		_, err := n.apply(open("535"))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "driver.branch" || !strings.Contains(fe.Problem, "debian13 offers no nvidia-kernel-open-dkms at branch 535 (branches it offers: 580, 590, 595, 610, 615, 620)") {
			t.Fatalf("apply 535 on Debian 13: err = %v, want driver.branch naming the branches debian13 offers", err)
		}
		if pkgs, locks := n.installed(), n.locks(); len(pkgs) > 0 || len(locks) > 0 {
			t.Errorf("after the refused 535: stack %v, locks %v, want none", pkgs, locks)
		}
		lists, _ := filepath.Glob(filepath.Join(n.root, "etc/apt/sources.list.d/cuda-*.list"))
		if len(lists) != 1 || filepath.Base(lists[0]) != "cuda-debian13-x86_64.list" {
			t.Errorf("cuda-keyring's sources entries after the swap: %v, want only cuda-debian13-x86_64.list", lists)
		}

		// The production branch 595, then back across 590 to 580.
		step(n, open("595"))
		names595 := n.unbranchedNames()
		out := step(n, open("580"))
		if !strings.Contains(out, "in place of nvidia-driver-pinning-595") {
			t.Errorf("the move to 580 does not say it replaced 595's pinning package:\n%s", out)
		}
		if got := n.unbranchedNames(); strings.Join(got, " ") != strings.Join(names595, " ") {
			t.Errorf("on 580 the installed stack is %v, on 595 it was %v: Debian's names do not change at 590", got, names595)
		}
		step(n, open("620"))

		// A version's pinning package installed by hand next to the
		// branch's holds the stack at one release: plan sees the second
		// lock, apply leaves the branch's alone.
		if err := n.repo.AddPackages(nvrepo.CUDADebianVersionPinningPackage("620.41.06")); err != nil {
			t.Fatal(err)
		}
		n.mustRun("apt-get", "update")
		n.mustRun("apt-get", "install", "-y", "nvidia-driver-pinning-620.41.06")
		plan, text := n.plan(open("620"))
		if plan.Empty() || !strings.Contains(text, "in place of nvidia-driver-pinning-620, nvidia-driver-pinning-620.41.06") {
			t.Errorf("plan with a version pinning package next to the branch's:\n%s", text)
		}
		step(n, open("620"))

		// 620 has no proprietary kernel modules: the plan fails on the
		// attribute and the root stays as it is.
		_, err = MakePlan(context.Background(), n.h, driverSteps(prop("620")))
		if !errors.As(err, &fe) || fe.Field != "driver.kernel_modules" {
			t.Errorf("plan 620 proprietary: err = %v, want a driver.kernel_modules error", err)
		}
		n.assertOnBranch(open("620"))
	})
}

// assertEndOfLifeWarning checks that the plan for cfg warns that its
// branch is past its end of life (the lifecycle table's warning, with the
// month and the nearest supported branch), and still plans the install.
func (n *aptNode) assertEndOfLifeWarning(cfg DriverConfig) {
	n.t.Helper()
	want := endOfLifeWarning(cfg.branchNumber(), n.h.now())
	if !strings.Contains(want, "branch "+cfg.Branch+" reached its end of life in") || !strings.Contains(want, "the nearest supported branch is") {
		n.t.Fatalf("the lifecycle table's warning for branch %s on %s is %q, want its end of life and the nearest supported branch", cfg.Branch, n.h.now().Format("2006-01-02"), want)
	}
	plan, text := n.plan(cfg)
	var warnings []string
	for _, sp := range plan {
		if sp.Step == "driver" {
			warnings = append(warnings, sp.Warnings...)
		}
	}
	if strings.Join(warnings, "\n") != want {
		n.t.Errorf("plan for end-of-life branch %s warns %q, want %q:\n%s", cfg.Branch, warnings, want, text)
	}
	if !strings.Contains(text, "driver: warning: "+want) {
		n.t.Errorf("the plan as printed does not show the warning %q:\n%s", want, text)
	}
	if plan.Empty() {
		n.t.Errorf("plan for end-of-life branch %s has no changes: the install goes ahead with a warning", cfg.Branch)
	}
}

// unbranchedNames are the installed stack's package names without the
// branch-named metapackages, sorted.
func (n *aptNode) unbranchedNames() []string {
	n.t.Helper()
	var names []string
	for name := range n.installed() {
		if n.names.branchMeta(name) == "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

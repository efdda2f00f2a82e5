package bootstrap

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// RHEL 10 with real dnf: no module streams, dnf's versionlock plugin is the
// branch lock, and the driver step owns its NVIDIA entries
// (driver_dnf_versionlock.go). Every apply must leave the configured
// branch's stack installed, exactly that branch locked, the user's own
// lock entries kept, and a plan with nothing left to do.

// userLock is a lock entry of the user's, on a package that is not the
// driver's: the step keeps it.
const userLock = "nvidia-container-toolkit-0:1.17.8-1.*"

// versionlockList is what `dnf versionlock list` prints, sorted.
func (b *dnfTestbed) versionlockList(t *testing.T) []string {
	t.Helper()
	lines := strings.Fields(chrootRun(t, b.root, "dnf", "-q", "versionlock", "list"))
	sort.Strings(lines)
	return lines
}

// wantLocked checks that dnf's versionlock list holds the user's entry and
// the driver stack's entries for branch, and nothing else.
func (b *dnfTestbed) wantLocked(t *testing.T, branch string) {
	t.Helper()
	want := []string{userLock}
	for _, name := range dnfVersionlockNames {
		want = append(want, name+"-3:"+branch+".*")
	}
	sort.Strings(want)
	if got := b.versionlockList(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dnf versionlock list:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestRealDNFRHEL10VersionlockIsTheBranchLock(t *testing.T) {
	b := newDNFTestbed(t, rocky10)
	if _, err := os.Stat(filepath.Join(b.root, "etc/dnf/modules.d")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(b.root, "etc/dnf/modules.d"))
		if len(entries) > 0 {
			t.Fatalf("the rocky10 root has module state: %v", entries)
		}
	}
	writeRootFile(t, b.root, dnfVersionlockListPath, "# the user's own lock\n"+userLock+"\n")

	lts := DriverConfig{Branch: "580"}
	production := DriverConfig{Branch: "595"}
	steps := []struct {
		description string
		cfg         DriverConfig
		stack       []string
	}{
		{"fresh install of 580 (long-term): the plugin, the lock, then nvidia-open", lts, openStack(nvrepo.LTSRelease580, "el10")},
		{"switch to 595 (production): the lock moves, distro-sync moves the stack up", production, openStack(nvrepo.ProductionRelease595, "el10")},
		{"back to 580: the lock moves back, distro-sync moves the whole stack down", lts, openStack(nvrepo.LTSRelease580, "el10")},
	}
	for i, step := range steps {
		if !t.Run(step.description, func(t *testing.T) {
			out := b.mustApply(t, step.cfg)
			b.wantStack(t, step.cfg, "", step.stack...)
			b.wantLocked(t, step.cfg.Branch)
			if t.Failed() {
				t.Logf("apply output:\n%s", out)
			}
		}) {
			return
		}
		if i == 0 {
			t.Run("dnf upgrade with 595 and 620 in the repository stays on 580", func(t *testing.T) {
				// repoquery applies no versionlock (versionlock(8)): the
				// newer branches are there for an upgrade to take.
				if out := chrootRun(t, b.root, "dnf", "-q", "repoquery", "nvidia-open"); !strings.Contains(out, nvrepo.LTSRelease620) || !strings.Contains(out, nvrepo.ProductionRelease595) {
					t.Fatalf("the repository's 595 and 620 are not visible to dnf:\n%s", out)
				}
				chrootRun(t, b.root, "dnf", "-y", "upgrade")
				b.wantStack(t, lts, "", openStack(nvrepo.LTSRelease580, "el10")...)
			})
		}
	}

	if t.Failed() {
		return
	}

	t.Run("a 404 on 595's kernel module package: the old lock comes back, agreeing with the stack", func(t *testing.T) {
		faults := nvrepo.Start(t) // its faults end with this subtest
		faults.Fail("*/kmod-nvidia-open-dkms-"+nvrepo.ProductionRelease595+"-1.el10.x86_64.rpm", 404, 1000)
		out, err := b.apply(t, production)
		var partial *PartialApplyError
		if !errors.As(err, &partial) {
			t.Fatalf("apply err = %v, want a PartialApplyError\n%s", err, out)
		}
		msg := err.Error()
		for _, want := range []string{"wrote " + dnfVersionlockListPath, "distro-sync --allowerasing", "rewrite " + dnfVersionlockListPath} {
			if !strings.Contains(msg, want) {
				t.Errorf("the report does not say %q:\n%s", want, msg)
			}
		}
		if len(partial.NotUndone) != 0 {
			t.Errorf("not undone: %v", partial.NotUndone)
		}
		b.wantLocked(t, "580")
		if got, want := strings.Join(b.installed(t), " "), strings.Join(sortedCopy(openStack(nvrepo.LTSRelease580, "el10")), " "); got != want {
			t.Errorf("stack after the failed move:\n  %s\nwant the 580 stack untouched:\n  %s", got, want)
		}
		if changes := b.plan(t, production); len(changes) == 0 {
			t.Error("plan after the failed move is empty; want the move still planned")
		}
	})

	t.Run("apply again once the server serves the package", func(t *testing.T) {
		b.mustApply(t, production)
		b.wantStack(t, production, "", openStack(nvrepo.ProductionRelease595, "el10")...)
		b.wantLocked(t, "595")
	})
}

package bootstrap

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// Failures mid-apply with real dnf: NVIDIA's server answers 404 for one
// package of the new branch. The apply must fail saying exactly which
// commands ran, the module stream must still agree with the installed
// stack, and once the server is fixed a plain apply finishes the job.

func TestRealDNFFailedMoveLeavesLockAndStackAgreeing(t *testing.T) {
	b := newDNFTestbed(t, rocky9)
	cfg570 := DriverConfig{Branch: "570"}
	b.mustApply(t, cfg570)
	b.wantStack(t, cfg570, "570-open", openStack("570.195.03", "el9")...)
	if t.Failed() {
		return
	}

	cfg580 := DriverConfig{Branch: "580"}
	t.Run("a 404 on 580's kernel module package", func(t *testing.T) {
		faults := nvrepo.Start(t) // its faults end with this subtest
		// dnf retries a failed download; every try fails.
		faults.Fail("*/kmod-nvidia-open-dkms-580.105.08-1.el9.x86_64.rpm", 404, 1000)
		out, err := b.apply(t, cfg580)
		var partial *PartialApplyError
		if !errors.As(err, &partial) {
			t.Fatalf("apply err = %v, want a PartialApplyError\n%s", err, out)
		}
		msg := err.Error()
		// switch-to downloads before it changes anything: the stream and
		// the stack stay on 570 together.
		for _, want := range []string{"kmod-nvidia-open-dkms-3:580.105.08", "dnf -y module switch-to nvidia-driver:580-open --allowerasing exited"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error does not name %q:\n%s", want, msg)
			}
		}
		if strings.Contains(msg, "ran chroot "+b.root+" dnf -y module switch-to") {
			t.Errorf("error says the failed switch-to ran:\n%s", msg)
		}
		if got := b.stream(t); got != "570-open" {
			t.Errorf("stream after the failed move = %q, want 570-open (the stack's)", got)
		}
		if got, want := strings.Join(b.installed(t), " "), strings.Join(sortedCopy(openStack("570.195.03", "el9")), " "); got != want {
			t.Errorf("stack after the failed move:\n  %s\nwant the 570 stack untouched:\n  %s", got, want)
		}
		if changes := b.plan(t, cfg580); len(changes) == 0 {
			t.Error("plan after the failed move is empty; want the move still planned")
		}
	})

	t.Run("apply again once the server serves the package", func(t *testing.T) {
		b.mustApply(t, cfg580)
		b.wantStack(t, cfg580, "580-open", openStack("580.105.08", "el9")...)
	})
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestRealDNFFailedFreshInstallReportsTheStreamItEnabled(t *testing.T) {
	b := newDNFTestbed(t, al2023, "580.95.05")
	cfg := DriverConfig{Branch: "580"}

	t.Run("a 404 on nvidia-open after the stream was enabled", func(t *testing.T) {
		faults := nvrepo.Start(t)
		faults.Fail("*/nvidia-open-580.95.05-1.amzn2023.noarch.rpm", 404, 1000)
		out, err := b.apply(t, cfg)
		var partial *PartialApplyError
		if !errors.As(err, &partial) {
			t.Fatalf("apply err = %v, want a PartialApplyError\n%s", err, out)
		}
		// The failed change ran one command before the one that failed:
		// the report must say so, since it changed the host.
		msg := err.Error()
		if !strings.Contains(msg, "ran chroot "+b.root+" dnf -y module enable nvidia-driver:580-open") {
			t.Errorf("the report does not say the stream was enabled:\n%s", msg)
		}
		if got := b.stream(t); got != "580-open" {
			t.Errorf("stream = %q, want 580-open, as reported", got)
		}
		if got := b.installed(t); len(got) != 0 {
			t.Errorf("NVIDIA packages after the failed install: %v, want none (one dnf transaction, not done)", got)
		}
		// An enabled stream with nothing installed contradicts no stack:
		// the plan keeps it and installs under it.
		changes := b.plan(t, cfg)
		last := commandLines(commandsOf(changes[len(changes)-1]))
		if strings.Join(last, "\n") != "dnf -y install --allowerasing nvidia-open" {
			t.Errorf("plan after the failure ends with %q, want only the install under the enabled stream", last)
		}
	})

	t.Run("apply again once the server serves the package", func(t *testing.T) {
		b.mustApply(t, cfg)
		b.wantStack(t, cfg, "580-open", openStack("580.95.05", "amzn2023")...)
	})
}

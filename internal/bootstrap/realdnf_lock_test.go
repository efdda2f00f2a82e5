package bootstrap

import (
	"context"
	"strings"
	"testing"
)

// The module stream as the lock, on Amazon Linux 2023 with real dnf: a
// release or branch that appears upstream after the install must not move
// the node off its branch, whoever runs the upgrade; a stream switched
// behind the tool's back is planned back; a user's versionlock on another
// branch is refused by name.

func TestRealDNFStreamIsTheBranchLock(t *testing.T) {
	b := newDNFTestbed(t, al2023, "570.195.03", "580.95.05")
	cfg := DriverConfig{Branch: "580"}

	t.Run("fresh install", func(t *testing.T) {
		b.mustApply(t, cfg)
		b.wantStack(t, cfg, "580-open", openStack("580.95.05", "amzn2023")...)
	})
	if t.Failed() {
		return
	}

	t.Run("branch 590 and a 580 patch release appear; dnf upgrade takes the patch release only", func(t *testing.T) {
		if err := b.cuda.AddDriverVersions("580.105.08", "590.44.01"); err != nil {
			t.Fatal(err)
		}
		// A user's (or unattended) upgrade, with fresh metadata. The
		// metapackages' ">=" dependencies would take 590; the stream does
		// not let them.
		chrootRun(t, b.root, "dnf", "-y", "--refresh", "upgrade")
		b.wantStack(t, cfg, "580-open", openStack("580.105.08", "amzn2023")...)
		if out := chrootRun(t, b.root, "dnf", "-q", "module", "list", "nvidia-driver"); !strings.Contains(out, "590-open") {
			t.Errorf("the repository's new 590-open stream is not visible to dnf:\n%s", out)
		}
	})

	t.Run("re-apply changes nothing", func(t *testing.T) {
		out := b.mustApply(t, cfg)
		if !strings.Contains(out, "No changes") {
			t.Errorf("re-apply output:\n%s\nwant no changes", out)
		}
	})

	t.Run("a switch-to 590 behind the tool's back: plan says so, apply moves back to 580", func(t *testing.T) {
		chrootRun(t, b.root, "dnf", "-y", "module", "switch-to", "nvidia-driver:590-open", "--allowerasing")
		if got := b.installed(t); !strings.Contains(strings.Join(got, " "), "nvidia-driver-590.44.01") {
			t.Fatalf("the user's switch-to did not move the stack: %v", got)
		}
		changes := b.plan(t, cfg)
		if lines := strings.Join(commandLines(commandsOf(changes[len(changes)-1])), "\n"); !strings.Contains(lines, "module switch-to nvidia-driver:580-open") {
			t.Errorf("plan = %v, want the move back to 580-open", changeCommands(changes))
		}
		b.mustApply(t, cfg)
		b.wantStack(t, cfg, "580-open", openStack("580.105.08", "amzn2023")...)
	})

	t.Run("a versionlock on 580 refuses a plan for 590, naming the lock", func(t *testing.T) {
		chrootRun(t, b.root, "dnf", "-q", "versionlock", "add", "kmod-nvidia-open-dkms")
		_, err := driverStep{cfg: DriverConfig{Branch: "590"}, arch: "amd64"}.Plan(context.Background(), b.host)
		if err == nil || !strings.Contains(err.Error(), "kmod-nvidia-open-dkms-3:580.105.08") || !strings.Contains(err.Error(), dnfVersionlockListPath) {
			t.Fatalf("plan for 590 under a 580 versionlock: err = %v", err)
		}
		chrootRun(t, b.root, "dnf", "-q", "versionlock", "delete", "kmod-nvidia-open-dkms")
	})

	t.Run("asking for the new branch moves the whole stack to it", func(t *testing.T) {
		cfg := DriverConfig{Branch: "590"}
		b.mustApply(t, cfg)
		b.wantStack(t, cfg, "590-open", openStack("590.44.01", "amzn2023")...)
	})
}

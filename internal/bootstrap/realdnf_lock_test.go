package bootstrap

import (
	"strings"
	"testing"
)

// The module stream as the lock, on Amazon Linux 2023 with real dnf: a
// release or branch that appears upstream after the install must not move
// the node off its branch, whoever runs the upgrade.

func TestRealDNFStreamHoldsTheBranchWhenNewReleasesAppear(t *testing.T) {
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

	t.Run("asking for the new branch moves the whole stack to it", func(t *testing.T) {
		cfg := DriverConfig{Branch: "590"}
		b.mustApply(t, cfg)
		b.wantStack(t, cfg, "590-open", openStack("590.44.01", "amzn2023")...)
	})
}

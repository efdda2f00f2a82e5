package debroot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebootstrapFailureNamesTheMirrorAndTheOverride runs build with a
// stand-in debootstrap that fails after more log lines than the error
// quotes (as a real one does when a partial mirror lacks the suite or the
// architecture): the error still names the mirror, where it came from and
// how to choose another.
func TestDebootstrapFailureNamesTheMirrorAndTheOverride(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\ni=0\nwhile [ $i -lt 40 ]; do echo \"I: Retrieving thing $i\"; i=$((i+1)); done\n" +
		"echo 'E: Failed getting release file file:///srv/partial/debian/dists/trixie/Release'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "debootstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(MirrorEnv, "")
	spec, err := Spec{Suite: "trixie", Arch: hostArch(), Mirror: "file:///srv/partial/debian"}.normalized()
	if err != nil {
		t.Fatalf("host architecture %s: %v", hostArch(), err)
	}
	err = build(context.Background(), spec, filepath.Join(t.TempDir(), "root.tar"))
	if err == nil {
		t.Fatal("build with a failing debootstrap succeeded")
	}
	for _, want := range []string{
		"file:///srv/partial/debian", "Spec.Mirror", "trixie", spec.Arch,
		MirrorEnv, "gpu-testbed rootfs --mirror", "Failed getting release file",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
}

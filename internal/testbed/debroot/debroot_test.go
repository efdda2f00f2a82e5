package debroot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func TestSpecRejectsBadFields(t *testing.T) {
	for _, tc := range []struct {
		description string
		spec        Spec
		want        string
	}{
		{"an empty suite is refused", Spec{}, "Spec.Suite"},
		{"an architecture other than amd64 or arm64 is refused", Spec{Suite: "bookworm", Arch: "i386"}, "Spec.Arch"},
		{"an include that is no package name is refused", Spec{Suite: "bookworm", Include: []string{"curl;rm"}}, "Spec.Include"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			_, err := tc.spec.normalized()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("normalized() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestSpecKeyIgnoresIncludeOrderAndDuplicates(t *testing.T) {
	a, _ := Spec{Suite: "bookworm", Include: []string{"curl", "gnupg", "curl"}}.normalized()
	b, _ := Spec{Suite: "bookworm", Include: []string{"gnupg", "curl"}}.normalized()
	c, _ := Spec{Suite: "bookworm", Include: []string{"gnupg"}}.normalized()
	if a.key() != b.key() {
		t.Errorf("keys differ for the same includes: %s, %s", a.key(), b.key())
	}
	if a.key() == c.key() {
		t.Errorf("keys equal for different includes: %s", a.key())
	}
	if !strings.HasPrefix(a.key(), "bookworm-amd64-minbase-") {
		t.Errorf("key %s does not start with suite-arch-variant", a.key())
	}
}

// TestRootsAreIndependentCopies builds (or takes from the cache) a Debian
// 12 and a Debian 13 root, extracts two copies of each, and checks that
// dpkg works in each, that apt has no sources left, and that a change to
// one copy does not reach the other.
func TestRootsAreIndependentCopies(t *testing.T) {
	for _, tc := range []struct {
		description string
		suite       string
		versionID   string
	}{
		{"Debian 12 (bookworm)", "bookworm", "12"},
		{"Debian 13 (trixie)", "trixie", "13"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			spec := Spec{Suite: tc.suite, Include: []string{"ca-certificates", "curl", "gnupg"}}
			started := time.Now()
			a := New(t, spec)
			t.Logf("first copy (building the cache if it was empty) in %s", time.Since(started).Round(time.Millisecond))
			started = time.Now()
			b := New(t, spec)
			t.Logf("second copy (extract only) in %s", time.Since(started).Round(time.Millisecond))
			checkIndependentCopies(t, spec, tc.versionID, a, b)
		})
	}
}

func checkIndependentCopies(t *testing.T, spec Spec, versionID, a, b string) {
	t.Helper()
	for _, root := range []string{a, b} {
		osRelease, err := os.ReadFile(filepath.Join(root, "etc/os-release"))
		if err != nil || !strings.Contains(string(osRelease), "VERSION_ID=\""+versionID+"\"\n") {
			t.Errorf("%s/etc/os-release = %q, %v; want VERSION_ID=%q", root, osRelease, err, versionID)
		}
		out, err := exec.Command("chroot", root, "dpkg", "-s", "apt").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Status: install ok installed") {
			t.Fatalf("chroot %s dpkg -s apt: %v\n%s", root, err, out)
		}
		for _, pkg := range spec.Include {
			if out, err := exec.Command("chroot", root, "dpkg", "-s", pkg).CombinedOutput(); err != nil {
				t.Errorf("included package %s is not installed: %v\n%s", pkg, err, out)
			}
		}
		sources, err := os.ReadFile(filepath.Join(root, "etc/apt/sources.list"))
		if err != nil || len(sources) != 0 {
			t.Errorf("sources.list of %s: %q, %v; want it empty", root, sources, err)
		}
		lists, _ := filepath.Glob(filepath.Join(root, "var/lib/apt/lists/*_Packages"))
		if len(lists) != 0 {
			t.Errorf("package lists left in %s: %v", root, lists)
		}
	}
	if err := os.WriteFile(filepath.Join(a, "etc/marker"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b, "etc/marker")); !os.IsNotExist(err) {
		t.Errorf("a file written into one copy appeared in the other (stat: %v)", err)
	}
	// Owners and modes survive the tarball: /etc/shadow belongs to group
	// shadow, and chage keeps its setgid bit.
	out, err := exec.Command("chroot", a, "stat", "-c", "%G %A", "/etc/shadow", "/usr/bin/chage").CombinedOutput()
	if err != nil || string(out) != "shadow -rw-r-----\nshadow -rwxr-sr-x\n" {
		t.Errorf("group and mode of /etc/shadow and /usr/bin/chage = %q, %v; want shadow -rw-r----- and shadow -rwxr-sr-x", out, err)
	}
}

func TestExtractRefusesABadSpec(t *testing.T) {
	err := Extract(context.Background(), Spec{Suite: "Bookworm!"}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "Spec.Suite") {
		t.Fatalf("Extract with a bad suite: %v, want an error naming Spec.Suite", err)
	}
}

// TestArm64RootRunsUnderQemu builds (or takes from the cache) an arm64
// root, whose second stage ran under qemu-user, and runs its dpkg. The
// first build takes minutes (about 4 on 2 busy cores), so -short skips it.
// It is the Debian 11 arm64 root that `make check-release` runs the arm64
// release binary in, so CI builds one arm64 root, not two.
func TestArm64RootRunsUnderQemu(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an arm64 root's first build takes minutes")
	}
	root := New(t, Spec{Suite: "bullseye", Arch: "arm64"})
	out, err := exec.Command("chroot", root, "dpkg", "--print-architecture").CombinedOutput()
	if err != nil || string(out) != "arm64\n" {
		t.Fatalf("chroot %s dpkg --print-architecture = %q, %v; want arm64", root, out, err)
	}
	out, err = exec.Command("chroot", root, "uname", "-m").CombinedOutput()
	if err != nil || string(out) != "aarch64\n" {
		t.Errorf("uname -m in the arm64 root = %q, %v; want aarch64 (qemu-user)", out, err)
	}
}

// TestBuildFetchesFromTheChosenMirror builds a root that is not cached,
// with the mirror overridden to a local server that answers 404, and checks
// which mirror debootstrap asked: $GPU_TESTBED_DEBIAN_MIRROR's, and
// Spec.Mirror's (gpu-testbed rootfs --mirror) over it.
func TestBuildFetchesFromTheChosenMirror(t *testing.T) {
	spec := Spec{Suite: "trixie"}
	if err := prerequisites(spec); err != nil {
		if testbed.Required() {
			t.Fatalf("debroot: %v", err)
		}
		t.Skipf("debroot: %v", err)
	}
	var mu sync.Mutex
	var asked []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer server.Close()
	t.Setenv("GPU_TESTBED_CACHE", t.TempDir())
	t.Setenv(MirrorEnv, server.URL+"/from-env/")

	for _, tc := range []struct {
		description string
		mirror      string
		wantPath    string
	}{
		{"the variable's mirror", "", "/from-env/dists/trixie/"},
		{"Spec.Mirror over the variable", server.URL + "/from-spec", "/from-spec/dists/trixie/"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			spec.Mirror = tc.mirror
			_, err := Tarball(context.Background(), spec)
			if err == nil {
				t.Fatal("Tarball succeeded against a mirror that answers 404 to everything")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) == 0 || !strings.HasPrefix(asked[0], tc.wantPath) {
				t.Errorf("debootstrap asked the mirror for %v, want %s… (error: %v)", asked, tc.wantPath, err)
			}
		})
	}
}

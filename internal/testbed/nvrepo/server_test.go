package nvrepo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
)

// curlRoot is a Debian root with curl, for requests made as a node would.
var curlRoot = debroot.Spec{Suite: "bookworm", Include: []string{"ca-certificates", "curl", "gnupg"}}

// TestServerServesMountsAtNVIDIAsAddressesInsideARoot fetches a mounted
// file with the root's own curl, by NVIDIA's host name, verifying TLS
// against the root's CA bundle; then a fault turns the next request into
// a 500, and the one after succeeds again.
func TestServerServesMountsAtNVIDIAsAddressesInsideARoot(t *testing.T) {
	root := debroot.New(t, curlRoot)
	s := Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Mount("developer.download.nvidia.com/compute/test/", dir)
	if err := s.Trust(root); err != nil {
		t.Fatal(err)
	}
	if err := s.Trust(root); err != nil { // twice changes nothing
		t.Fatal(err)
	}
	hosts, _ := os.ReadFile(filepath.Join(root, "etc/hosts"))
	if n := strings.Count(string(hosts), "127.0.0.1\tdeveloper.download.nvidia.com\n"); n != 1 {
		t.Errorf("/etc/hosts maps developer.download.nvidia.com %d times, want once:\n%s", n, hosts)
	}

	const url = "https://developer.download.nvidia.com/compute/test/hello.txt"
	out, err := exec.Command("chroot", root, "curl", "-sS", "--fail", url).CombinedOutput()
	if err != nil || string(out) != "hello from the model\n" {
		t.Fatalf("curl %s in the root: %v\n%s", url, err, out)
	}

	s.Fail("*/hello.txt", 500, 1)
	out, err = exec.Command("chroot", root, "curl", "-sS", "--fail", url).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "500") {
		t.Errorf("curl after Fail(500): %v\n%s; want an HTTP 500 failure", err, out)
	}
	if out, err := exec.Command("chroot", root, "curl", "-sS", "--fail", url).CombinedOutput(); err != nil {
		t.Errorf("curl after the fault was used up: %v\n%s", err, out)
	}
	if out, err := exec.Command("chroot", root, "curl", "-sS", "--fail", "https://developer.download.nvidia.com/compute/test/missing").CombinedOutput(); err == nil || !strings.Contains(string(out), "404") {
		t.Errorf("curl of a missing file: %v\n%s; want 404", err, out)
	}

	// A hang holds the request until the client gives up: curl's own
	// --max-time ends it with exit status 28 (timeout).
	s.Fail("/compute/test/hello.txt", 0, 1)
	_, err = exec.Command("chroot", root, "curl", "-sS", "--fail", "--max-time", "2", url).CombinedOutput()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 28 {
		t.Errorf("curl of a hanging request: %v, want exit status 28 (timeout)", err)
	}

	want := "developer.download.nvidia.com/compute/test/hello.txt"
	if got := s.Requests(); len(got) != 5 || !slices.Contains(got, want) {
		t.Errorf("Requests() = %q, want five requests including %s", got, want)
	}
}

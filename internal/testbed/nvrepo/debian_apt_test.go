package nvrepo

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
)

// chrootRun runs a command in root as a node's shell would, returning
// its stdout, stderr and exit status.
func chrootRun(t *testing.T, root string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("chroot", append([]string{root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8", "HOME=/root"}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %v in %s: %v", args, root, err)
	}
	return out.String(), errOut.String(), code
}

func mustRun(t *testing.T, root string, args ...string) string {
	t.Helper()
	out, errOut, code := chrootRun(t, root, args...)
	if code != 0 {
		t.Fatalf("%s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestCUDADebianModelWithRealApt sets the model up as NVIDIA's guide has a
// user do it (download cuda-keyring with the root's curl, dpkg -i it, apt-get
// update with the real signature check), shows the defect issue 15
// describes (cuda-drivers-550 installs the newest branch's stack, because its
// dependencies are unbounded), and that a repository signed by a key the
// root does not trust makes apt-get update report a GPG error.
func TestCUDADebianModelWithRealApt(t *testing.T) {
	root := debroot.New(t, curlRoot)
	s := Start(t)
	repo := BuildCUDADebian(t, CUDADebianOptions{})
	s.Mount(repo.Address(), repo.Dir())
	if err := s.Trust(root); err != nil {
		t.Fatal(err)
	}

	mustRun(t, root, "curl", "-fsSL", "-o", "/tmp/cuda-keyring_1.1-1_all.deb",
		"https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb")
	mustRun(t, root, "dpkg", "-i", "/tmp/cuda-keyring_1.1-1_all.deb")
	list, err := os.ReadFile(root + "/etc/apt/sources.list.d/cuda-debian12-x86_64.list")
	if err != nil || !strings.Contains(string(list), "[signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /") {
		t.Fatalf("cuda-keyring's sources entry: %q, %v", list, err)
	}

	_, errOut, code := chrootRun(t, root, "apt-get", "update")
	if code != 0 || strings.Contains(errOut, "W:") || strings.Contains(errOut, "E:") {
		t.Fatalf("apt-get update with the trusted model: exit %d, stderr:\n%s", code, errOut)
	}

	mustRun(t, root, "apt-get", "install", "-y", "cuda-drivers-550")
	versions := mustRun(t, root, "dpkg-query", "-W", "-f", "${Package} ${Version}\n",
		"cuda-drivers-550", "nvidia-driver", "libnvidia-ml1", "nvidia-kernel-dkms", "libcuda1", "firmware-nvidia-gsp")
	for _, want := range []string{
		"cuda-drivers-550 550.163.01-1",
		"nvidia-driver 590.44.01-1", "libnvidia-ml1 590.44.01-1", "nvidia-kernel-dkms 590.44.01-1",
		"libcuda1 590.44.01-1", "firmware-nvidia-gsp 590.44.01-1",
	} {
		if !strings.Contains(versions, want+"\n") {
			t.Errorf("after apt-get install cuda-drivers-550, want %q installed; dpkg-query:\n%s", want, versions)
		}
	}

	other, err := NewSigningKey("an untrusted key <nobody@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Resign(other); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = chrootRun(t, root, "apt-get", "update")
	if code != 0 {
		t.Errorf("apt-get update with a cached index and an untrusted key: exit %d, want 0 (apt warns and keeps the old index)", code)
	}
	for _, want := range []string{"GPG error: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64", "NO_PUBKEY", "previous index files will be used"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("apt-get update stderr lacks %q:\n%s", want, errOut)
		}
	}
}

package nvrepo

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
)

// aptRoot is a bookworm root trusting the server, with the CUDA model's
// keyring installed and its index fetched, as after NVIDIA's setup steps.
func aptRoot(t *testing.T, s *Server, repos ...*DebianRepo) string {
	t.Helper()
	root := debroot.New(t, curlRoot)
	for _, r := range repos {
		s.Mount(r.Address(), r.Dir())
	}
	if err := s.Trust(root); err != nil {
		t.Fatal(err)
	}
	return root
}

func installed(t *testing.T, root string, pkgs ...string) map[string]string {
	t.Helper()
	out, _, _ := chrootRun(t, root, append([]string{"dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"}, pkgs...)...)
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "ii" {
			got[f[0]] = f[1]
		}
	}
	return got
}

// TestCUDADebianPinningAndFlavors checks the model's branch and flavor
// shapes with real apt: a pinning package keeps cuda-drivers-580 on the
// newest 580 release instead of 590, the open flavor's metapackage brings
// nvidia-kernel-open-dkms, switching to the proprietary metapackage removes
// it (the flavors conflict), and installing another branch's pinning
// package swaps the first one out.
func TestCUDADebianPinningAndFlavors(t *testing.T) {
	s := Start(t)
	repo := BuildCUDADebian(t, CUDADebianOptions{})
	root := aptRoot(t, s, repo)
	keyring := "/usr/share/keyrings/cuda-archive-keyring.gpg"
	if err := os.WriteFile(root+keyring, repo.Key().PublicKeyring(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/etc/apt/sources.list.d/cuda.list", []byte("deb [signed-by="+keyring+"] https://"+repo.Address()+" /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, root, "apt-get", "update")

	mustRun(t, root, "apt-get", "install", "-y", "nvidia-driver-pinning-580")
	pin, err := os.ReadFile(root + "/etc/apt/preferences.d/nvidia-driver-pinning-580")
	if err != nil || !strings.Contains(string(pin), "Pin: version 580.*\nPin-Priority: 1000\n") {
		t.Fatalf("pin file of nvidia-driver-pinning-580: %q, %v", pin, err)
	}
	mustRun(t, root, "apt-get", "install", "-y", "nvidia-open-580")
	got := installed(t, root, "nvidia-driver", "nvidia-kernel-open-dkms", "nvidia-kernel-dkms", "libnvidia-ml1")
	for _, p := range []string{"nvidia-driver", "nvidia-kernel-open-dkms", "libnvidia-ml1"} {
		if got[p] != "580.105.08-1" {
			t.Errorf("with the 580 pin, nvidia-open-580 installed %s %q, want 580.105.08-1 (all: %v)", p, got[p], got)
		}
	}
	if _, ok := got["nvidia-kernel-dkms"]; ok {
		t.Errorf("the open flavor installed nvidia-kernel-dkms too: %v", got)
	}

	mustRun(t, root, "apt-get", "install", "-y", "cuda-drivers-580")
	got = installed(t, root, "nvidia-kernel-open-dkms", "nvidia-kernel-dkms")
	if got["nvidia-kernel-dkms"] != "580.105.08-1" || got["nvidia-kernel-open-dkms"] != "" {
		t.Errorf("after cuda-drivers-580, kernel module packages are %v, want only nvidia-kernel-dkms 580.105.08-1", got)
	}

	mustRun(t, root, "apt-get", "install", "-y", "nvidia-driver-pinning-570")
	got = installed(t, root, "nvidia-driver-pinning-570", "nvidia-driver-pinning-580")
	if got["nvidia-driver-pinning-570"] == "" || got["nvidia-driver-pinning-580"] != "" {
		t.Errorf("after installing nvidia-driver-pinning-570, pinning packages are %v, want only 570's", got)
	}
}

// TestToolkitDebianExactVersions checks the toolkit model's "=" dependencies
// with real apt: asking for one package at an older version fails as on
// NVIDIA's repository, asking for all four at that version works.
func TestToolkitDebianExactVersions(t *testing.T) {
	s := Start(t)
	repo := BuildToolkitDebian(t, nil)
	root := aptRoot(t, s, repo)
	mustRun(t, root, "sh", "-c", "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg")
	mustRun(t, root, "sh", "-c", "curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | "+
		"sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' > /etc/apt/sources.list.d/nvidia-container-toolkit.list")
	mustRun(t, root, "apt-get", "update")

	// apt prints the unmet dependencies on stdout, "E: Unable to correct
	// problems" on stderr.
	out, errOut, code := chrootRun(t, root, "apt-get", "install", "-y", "nvidia-container-toolkit=1.17.8-1")
	if code != 100 || !strings.Contains(out, "Depends: nvidia-container-toolkit-base (= 1.17.8-1) but 1.18.1-1 is to be installed") || !strings.Contains(errOut, "E: ") {
		t.Errorf("installing only nvidia-container-toolkit=1.17.8-1: exit %d, want 100 and apt's unmet-dependency error; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	mustRun(t, root, "apt-get", "install", "-y", "nvidia-container-toolkit=1.17.8-1", "nvidia-container-toolkit-base=1.17.8-1",
		"libnvidia-container-tools=1.17.8-1", "libnvidia-container1=1.17.8-1")
	got := installed(t, root, "nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1")
	for _, p := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
		if got[p] != "1.17.8-1" {
			t.Errorf("%s is %q, want 1.17.8-1 (all: %v)", p, got[p], got)
		}
	}
}

// TestCUDADebianTodayShapes checks the late-2026 models' shapes without
// building them: 620 has no proprietary kernel modules nor the
// metapackages that depend on them, 615 and older still have both flavors, the
// debian13 keyring points at debian13, and the branches are the ones
// NVIDIA publishes.
func TestCUDADebianTodayShapes(t *testing.T) {
	names := func(b CUDADebianBranch) map[string]bool {
		pkgs, err := CUDADebianDriverPackages("x86_64", b, b.Versions[len(b.Versions)-1])
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, p := range pkgs {
			out[p.Name] = true
		}
		return out
	}
	var branches12, branches13 []string
	for _, b := range CUDADebian12Today {
		branches12 = append(branches12, b.Branch)
	}
	for _, b := range CUDADebian13Today {
		branches13 = append(branches13, b.Branch)
		got := names(b)
		for _, p := range []string{"nvidia-open", "nvidia-open-" + b.Branch, "nvidia-kernel-open-dkms", "nvidia-driver", "libnvidia-ml1"} {
			if !got[p] {
				t.Errorf("branch %s lacks %s", b.Branch, p)
			}
		}
		for _, p := range []string{"nvidia-kernel-dkms", "cuda-drivers", "cuda-drivers-" + b.Branch} {
			if got[p] == b.OpenOnly {
				t.Errorf("branch %s (open only: %v) has %s: %v", b.Branch, b.OpenOnly, p, got[p])
			}
		}
		if (b.Branch == "620") != b.OpenOnly {
			t.Errorf("branch %s: OpenOnly %v, want it only for 620", b.Branch, b.OpenOnly)
		}
	}
	if got := strings.Join(branches12, " "); got != "535 570 580 590 595 610 615 620" {
		t.Errorf("debian12 branches %s", got)
	}
	if got := strings.Join(branches13, " "); got != "580 590 595 610 615 620" {
		t.Errorf("debian13 branches %s", got)
	}
	key, err := processKey()
	if err != nil {
		t.Fatal(err)
	}
	keyring := CUDAKeyring("debian13", "x86_64", key)
	list := string(keyring.Files["/etc/apt/sources.list.d/cuda-debian13-x86_64.list"])
	if !strings.Contains(list, "https://developer.download.nvidia.com/compute/cuda/repos/debian13/x86_64/ /") {
		t.Errorf("debian13 keyring's sources entry: %q", list)
	}
	pin := string(CUDADebianVersionPinningPackage("595.71.05").Files["/etc/apt/preferences.d/nvidia-driver-pin"])
	if !strings.Contains(pin, "Pin: version 595.71.05-*\nPin-Priority: 1000\n") {
		t.Errorf("version pinning file: %q", pin)
	}
}

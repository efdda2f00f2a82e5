package bootstrap

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// TestRealAptDriver runs the driver step against real apt and dpkg in
// Debian 12 roots (see realapt_root_test.go), one fresh root per scenario,
// all installing from one model of NVIDIA's debian12 CUDA repository
// (branches 550, 570, 580 with two releases, 590; pinning packages from
// 570). Scenarios that change the repository build their own.
func TestRealAptDriver(t *testing.T) {
	srv := nvrepo.Start(t)
	repo := nvrepo.BuildCUDADebian(t, nvrepo.CUDADebianOptions{})
	open, prop := openModules, proprietaryModules
	step := (*aptNode).applyOnBranch

	for _, cfg := range []DriverConfig{open("550"), prop("550"), open("570"), prop("570"), open("580"), prop("580")} {
		t.Run("fresh install of "+cfg.Branch+" "+cfg.flavor(), func(t *testing.T) {
			n := newAptNode(t, srv, repo)
			step(n, cfg)
			switch {
			case cfg.Branch == "550" && cfg.open():
				// 550 -> 580 -> 570 (a downgrade under a pin) -> 550
				// (pinned -> unpinned) -> 570 (unpinned -> pinned).
				for _, next := range []string{"580", "570", "550", "570"} {
					out := step(n, open(next))
					if !strings.Contains(out, "move the NVIDIA driver to branch "+next) {
						t.Errorf("apply to %s said:\n%s", next, out)
					}
				}
			case cfg.Branch == "580" && !cfg.open():
				// Flavor switches, then flavor and branch at once.
				step(n, open("580"))
				step(n, prop("580"))
				step(n, open("550"))
				step(n, prop("550"))
			}
		})
	}

	for _, branch := range []string{"550", "580"} {
		t.Run("an upgrade to 590 behind the tool's back from "+branch+" is seen by plan and undone by apply", func(t *testing.T) {
			n := newAptNode(t, srv, repo)
			step(n, open(branch))
			stackBefore := n.installed()
			// As a user would force it past the lock: every installed stack
			// package at 590, downgrades and held packages allowed.
			args := []string{"apt-get", "install", "-y", "--allow-downgrades", "-o", "APT::Get::Allow-Change-Held-Packages=true",
				"nvidia-open=590.44.01-1", "nvidia-open-590=590.44.01-1"}
			for name := range stackBefore {
				if n.names.branchMeta(name) == "" {
					args = append(args, name+"=590.44.01-1")
				}
			}
			for _, name := range []string{"libcuda1", "nvidia-smi", "nvidia-driver-cuda"} {
				if _, ok := stackBefore[name]; !ok {
					args = append(args, name+"=590.44.01-1")
				}
			}
			n.mustRun(args...)
			plan, out := n.plan(open(branch))
			// From 580 the branch's own nvidia-open-580 stays: a mixed stack.
			if plan.Empty() || !strings.Contains(out, "branch 590 (libnvidia-ml1 590.44.01-1, nvidia-driver 590.44.01-1, nvidia-kernel-open-dkms 590.44.01-1), asked "+branch) {
				t.Errorf("plan does not tell the truth about the 590 stack:\n%s", out)
			}
			step(n, open(branch))
		})
	}

	t.Run("a patch release of the branch is apt-get upgrade's, and plan stays up to date", func(t *testing.T) {
		repo := nvrepo.BuildCUDADebian(t, nvrepo.CUDADebianOptions{})
		n := newAptNode(t, srv, repo)
		step(n, open("580"))
		branch := nvrepo.CUDADebianBranch{Branch: "580", Versions: []string{"580.95.05-1", "580.105.08-1"}, Pinning: true}
		patch, err := nvrepo.CUDADebianDriverPackages("x86_64", branch, "580.126.09-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.AddPackages(patch...); err != nil {
			t.Fatal(err)
		}
		n.mustRun("apt-get", "update")
		n.assertUpToDate(open("580"))
		n.mustRun("apt-get", "upgrade", "-y")
		if v := n.installed()["libnvidia-ml1"]; v != "580.126.09-1" {
			t.Errorf("after apt-get upgrade libnvidia-ml1 is %s, want the patch release 580.126.09-1", v)
		}
		n.assertOnBranch(open("580"))
		n.assertUpToDate(open("580"))
	})

	t.Run("a download failing after the lock changed: the old lock comes back and the error says what changed", func(t *testing.T) {
		n := newAptNode(t, srv, repo)
		step(n, open("550"))
		srv.Fail("*/libnvidia-ml1_580.105.08-1_*.deb", 404, 1)
		out, err := n.apply(open("580"))
		if err == nil {
			t.Fatalf("apply succeeded with a 404 on libnvidia-ml1:\n%s", out)
		}
		p := partial(t, err)
		done := strings.Join(p.PartlyApplied, "\n")
		for _, want := range []string{"removed " + aptLockPath, "apt-get install -y nvidia-driver-pinning-580"} {
			if !strings.Contains(done, want) {
				t.Errorf("the error does not list %q as done:\n%v", want, err)
			}
		}
		undone := strings.Join(p.Undone, "\n")
		for _, want := range []string{"apt-get purge -y nvidia-driver-pinning-580", "write " + aptLockPath} {
			if !strings.Contains(undone, want) {
				t.Errorf("the error does not list %q as put back:\n%v", want, err)
			}
		}
		if len(p.NotUndone) > 0 {
			t.Errorf("not put back: %v", p.NotUndone)
		}
		n.assertOnBranch(open("550"))
		step(n, open("580"))
	})

	t.Run("a branch the repository does not offer fails before the lock or stack change", func(t *testing.T) {
		n := newAptNode(t, srv, repo)
		step(n, prop("550"))
		_, err := n.apply(prop("560"))
		if err == nil || !strings.Contains(err.Error(), "driver.branch") || !strings.Contains(err.Error(), "550, 570, 580, 590") {
			t.Fatalf("err = %v, want it to name driver.branch and the branches offered", err)
		}
		n.assertOnBranch(prop("550"))
	})

	t.Run("dpkg's lock held by another process: a clear error and the root untouched", func(t *testing.T) {
		n := newAptNode(t, srv, repo)
		step(n, open("550"))
		// fcntl locks belong to a process, and closing any descriptor of
		// the file drops them all: the holder is another process, this
		// test binary re-run as TestHoldDpkgLockHelper.
		holder := exec.Command(os.Args[0], "-test.run=^TestHoldDpkgLockHelper$")
		holder.Env = append(os.Environ(), "GPU_TEST_HOLD_DPKG_LOCK="+filepath.Join(n.root, dpkgFrontendLock))
		release, err := holder.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		held, err := holder.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(held).ReadString('\n')
		if line != "locked\n" {
			t.Fatalf("the lock holder said %q", line)
		}
		_, err = n.apply(open("580"))
		release.Close()
		if err := holder.Wait(); err != nil {
			t.Errorf("lock holder: %v", err)
		}
		if err == nil || !strings.Contains(err.Error(), dpkgFrontendLock+" is held by process") {
			t.Errorf("err = %v, want it to say who holds %s", err, dpkgFrontendLock)
		}
		n.assertOnBranch(open("550"))
	})

	t.Run("a repository whose key is no longer trusted stops the apply before anything installs", func(t *testing.T) {
		repo := nvrepo.BuildCUDADebian(t, nvrepo.CUDADebianOptions{})
		n := newAptNode(t, srv, repo)
		step(n, open("550"))
		other, err := nvrepo.NewSigningKey("an untrusted key <nobody@example.com>")
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Resign(other); err != nil {
			t.Fatal(err)
		}
		_, err = n.apply(open("580"))
		if err == nil || !strings.Contains(err.Error(), "GPG error") {
			t.Fatalf("err = %v, want the GPG error of apt-get update", err)
		}
		n.assertOnBranch(open("550"))
	})
}

// TestHoldDpkgLockHelper is the process that holds dpkg's frontend lock for
// the held-lock scenario: it takes the lock as apt does (an fcntl write
// lock), says "locked", and keeps it until its stdin closes.
func TestHoldDpkgLockHelper(t *testing.T) {
	path := os.Getenv("GPU_TEST_HOLD_DPKG_LOCK")
	if path == "" {
		t.Skip("the lock holder of TestRealAptDriver; runs only as its helper process")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lock := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lock); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

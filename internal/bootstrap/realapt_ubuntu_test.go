package bootstrap

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// TestRealAptUbuntuCUDA runs the driver step against real apt and dpkg on
// NVIDIA's CUDA repository for Ubuntu 24.04 (nvrepo's ubuntu2404 model:
// branch 550 without a pinning package, 580 branch-named, 595 unbranched,
// 620 open only).
//
// Plainly: there is no Ubuntu root here (only Debian's mirror is reachable
// to build roots from), so each scenario is a Debian 12 root
// (realapt_root_test.go) whose /etc/os-release says Ubuntu 24.04. apt's and
// dpkg's behavior — resolution under the pinning package, removals,
// holds, conffiles, downgrades — is real; the distribution is not: no
// Ubuntu archive, and Debian's apt 2.6 rather than Ubuntu 24.04's 2.7
// (same preferences and resolver semantics for what this test uses). The
// node opts into NVIDIA's repository as the guide's first step does: the
// repository's cuda-keyring package, downloaded and installed with dpkg.
func TestRealAptUbuntuCUDA(t *testing.T) {
	srv := nvrepo.Start(t)
	repo := nvrepo.BuildCUDAUbuntu(t, nvrepo.CUDAUbuntuOptions{})
	open, prop := openModules, proprietaryModules

	step := func(n *aptNode, cfg DriverConfig) string {
		t.Helper()
		out := n.mustApply(cfg)
		assertUbuntuOnBranch(n, cfg)
		n.assertUpToDate(cfg)
		return out
	}

	t.Run("post-590: the pinning package first, then the unbranched compute-only packages", func(t *testing.T) {
		n := newUbuntuCUDANode(t, srv, repo)
		plan, out := n.plan(open("595"))
		if !strings.Contains(out, "note: installing from NVIDIA's CUDA repository, not Ubuntu's archive: /etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list names NVIDIA's CUDA repository for ubuntu2404") {
			t.Errorf("plan does not say where the driver comes from:\n%s", out)
		}
		cmds := strings.Join(changeCommands(plan[0].Changes)[0], "\n")
		pin, install := strings.Index(cmds, "install -y nvidia-driver-pinning-595"), strings.Index(cmds, "libnvidia-compute nvidia-dkms-open nvidia-utils")
		if pin < 0 || install < 0 || pin > install {
			t.Errorf("the pinning package is not installed before the driver:\n%s", cmds)
		}
		step(n, open("595"))
		// apt-get upgrade stays on the branch although 620 is newer.
		n.mustRun("apt-get", "upgrade", "-y")
		assertUbuntuOnBranch(n, open("595"))
	})

	t.Run("580 to 595 and back across the rename, with a package the user added", func(t *testing.T) {
		n := newUbuntuCUDANode(t, srv, repo)
		step(n, open("580"))
		n.mustRun("apt-get", "install", "-y", "libnvidia-gl-580")
		n.mustRun("apt-mark", "hold", "nvidia-utils-580")
		out := step(n, open("595"))
		if !strings.Contains(out, "move the NVIDIA driver to branch 595") || !strings.Contains(out, "in place of nvidia-driver-pinning-580") {
			t.Errorf("apply to 595 said:\n%s", out)
		}
		if v := n.all()["libnvidia-gl"]; branchOf(v) != "595" {
			t.Errorf("libnvidia-gl-580 did not move to libnvidia-gl 595 (libnvidia-gl %q)", v)
		}
		step(n, open("580"))
		if v := n.all()["libnvidia-gl-580"]; branchOf(v) != "580" {
			t.Errorf("libnvidia-gl did not move back to libnvidia-gl-580 (%q)", v)
		}
	})

	t.Run("flavor and rename at once, then below the pinning packages and up to open-only 620", func(t *testing.T) {
		n := newUbuntuCUDANode(t, srv, repo)
		step(n, prop("580"))
		step(n, open("595"))
		step(n, open("550")) // the step's own preferences file: no pinning package for 550
		step(n, open("620"))
	})

	t.Run("Ubuntu's archive to NVIDIA's repository and back", func(t *testing.T) {
		archive := nvrepo.BuildUbuntuArchiveModel(t, "580.95.05-0ubuntu0.24.04.2")
		n := newUbuntuNode(t, srv, repo, archive)
		keyring := "/usr/share/keyrings/ubuntu-archive-model.gpg"
		if err := os.WriteFile(filepath.Join(n.root, keyring), archive.Key().PublicKeyring(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.root, "etc/apt/sources.list.d/ubuntu-archive-model.list"), []byte("deb [signed-by="+keyring+"] https://"+archive.Address()+" /\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		server := func(cfg DriverConfig) {
			t.Helper()
			n.mustApply(cfg)
			pkgs := n.all()
			for _, want := range []string{"nvidia-headless-" + cfg.Branch + "-server-open", "nvidia-utils-" + cfg.Branch + "-server"} {
				if _, ok := pkgs[want]; !ok {
					t.Errorf("%s is not installed", want)
				}
			}
			for name, v := range pkgs {
				if ubuntuDriverName.MatchString(name) && !strings.Contains(name, "-server") || strings.HasPrefix(name, "nvidia-driver-pinning-") || name == "cuda-keyring" {
					t.Errorf("%s %s of NVIDIA's repository is still installed", name, v)
				}
			}
			if held := n.mustRun("apt-mark", "showhold"); strings.TrimSpace(held) != "nvidia-headless-"+cfg.Branch+"-server-open\nnvidia-utils-"+cfg.Branch+"-server" {
				t.Errorf("held: %q", held)
			}
			if got := n.locks(); len(got) != 0 {
				t.Errorf("locks left: %v", got)
			}
			n.assertUpToDate(cfg)
		}
		server(open("580"))

		n.optIn()
		step(n, open("595"))
		for name := range n.all() {
			if ubuntuDriverName.MatchString(name) && strings.HasSuffix(strings.TrimSuffix(name, "-open"), "-server") {
				t.Errorf("%s of Ubuntu's archive is still installed", name)
			}
		}
		if held := strings.TrimSpace(n.mustRun("apt-mark", "showhold")); held != "" {
			t.Errorf("holds left: %q", held)
		}

		n.mustRun("apt-get", "purge", "-y", "cuda-keyring")
		n.mustRun("apt-get", "update")
		// NVIDIA's stack without NVIDIA's source: the step refuses, and
		// leaves it alone; the purge its error names moves the node to
		// Ubuntu's archive.
		before := n.all()
		_, err := n.apply(open("580"))
		m := regexp.MustCompile(`apt-get purge ([^)]*)\) to use Ubuntu's archive`).FindStringSubmatch(fmt.Sprint(err))
		if err == nil || !strings.Contains(err.Error(), "driver.branch") || m == nil {
			t.Fatalf("apply without NVIDIA's source: err = %v, want a driver.branch error naming the purge", err)
		}
		if after := n.all(); !maps.Equal(before, after) {
			t.Errorf("the refused apply changed the packages:\nbefore %v\nafter  %v", before, after)
		}
		n.mustRun(append([]string{"apt-get", "purge", "-y"}, strings.Fields(m[1])...)...)
		server(open("580"))
	})

	t.Run("a driver version's pinning package is purged: one lock", func(t *testing.T) {
		repo := nvrepo.BuildCUDAUbuntu(t, nvrepo.CUDAUbuntuOptions{})
		if err := repo.AddPackages(nvrepo.CUDAUbuntuVersionPinningPackage("595.71.05")); err != nil {
			t.Fatal(err)
		}
		n := newUbuntuCUDANode(t, srv, repo)
		step(n, open("595"))
		n.mustRun("apt-get", "install", "-y", "nvidia-driver-pinning-595.71.05")
		if plan, out := n.plan(open("595")); plan.Empty() {
			t.Errorf("a version pin in place of the branch's, yet the plan is empty:\n%s", out)
		}
		step(n, open("595"))
	})
}

// newUbuntuCUDANode is a Debian 12 root that says it is Ubuntu 24.04 (see
// TestRealAptUbuntuCUDA), reaching repo at NVIDIA's address, with the
// repository's cuda-keyring installed as the guide installs it.
func newUbuntuCUDANode(t *testing.T, srv *nvrepo.Server, repo *nvrepo.DebianRepo) *aptNode {
	t.Helper()
	n := newUbuntuNode(t, srv, repo)
	n.optIn()
	return n
}

// newUbuntuNode is the root without any apt source: the repositories are
// reachable, none is configured.
func newUbuntuNode(t *testing.T, srv *nvrepo.Server, repos ...*nvrepo.DebianRepo) *aptNode {
	t.Helper()
	root := debroot.New(t, aptRootSpecFor("bookworm"))
	osRelease := filepath.Join(root, "etc/os-release")
	if err := os.Remove(osRelease); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ubuntu, err := os.ReadFile(filepath.Join("testdata", "osrelease", "ubuntu-24.04"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(osRelease, ubuntu, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range repos {
		srv.Mount(r.Address(), r.Dir())
	}
	if err := srv.Trust(root); err != nil {
		t.Fatal(err)
	}
	h := &Host{Root: root, Runner: ExecRunner{}, GPUs: driverlessGPUs(t), Getenv: func(string) string { return "" }}
	return &aptNode{t: t, root: root, h: h, srv: srv, repo: repos[0]}
}

// optIn installs NVIDIA's repository's cuda-keyring, as the guide's
// network repository setup does.
func (n *aptNode) optIn() {
	n.t.Helper()
	n.mustRun("curl", "-fsSL", "-o", "/tmp/cuda-keyring.deb", "https://"+n.repo.Address()+"cuda-keyring_1.1-1_all.deb")
	n.mustRun("dpkg", "-i", "/tmp/cuda-keyring.deb")
}

// all is every installed package with its version, from dpkg-query.
func (n *aptNode) all() map[string]string {
	n.t.Helper()
	out := n.mustRun("dpkg-query", "-W", "-f", "${db:Status-Status} ${Package} ${Version}\n")
	pkgs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "installed" {
			pkgs[f[1]] = f[2]
		}
	}
	return pkgs
}

// ubuntuDriverName matches the driver packages of both namings (and the
// metapackages), independently of the step's own parser.
var ubuntuDriverName = regexp.MustCompile(`^(?:libnvidia-[a-z0-9-]+|nvidia-(?:dkms|driver|utils|kernel-common|kernel-source|headless)[a-z0-9-]*|cuda-drivers[0-9-]*|nvidia-open[0-9-]*)$`)

// assertUbuntuOnBranch checks the root from dpkg's and apt's own answers:
// the branch's compute-only packages in its naming installed, every driver
// package on the branch and of its naming (a branch-named package from 590
// on, an unbranched one before, is a mixed stack), the other flavor's DKMS
// package gone, apt's candidates on the branch, and exactly one lock.
func assertUbuntuOnBranch(n *aptNode, cfg DriverConfig) {
	n.t.Helper()
	pkgs := n.all()
	branchNamed := regexp.MustCompile(`-[1-9][0-9]{2}(-open)?$`)
	var names []string
	for name, v := range pkgs {
		if !ubuntuDriverName.MatchString(name) || strings.HasPrefix(name, "nvidia-driver-pinning-") {
			continue
		}
		names = append(names, name)
		if branchOf(v) != cfg.Branch {
			n.t.Errorf("%s %s is installed, not on branch %s", name, v, cfg.Branch)
		}
		named := branchNamed.MatchString(name)
		switch {
		case cfg.branchNumber() >= 590 && named:
			n.t.Errorf("%s is installed: branch %s's packages carry no branch", name, cfg.Branch)
		case cfg.branchNumber() < 590 && !named && name != "cuda-drivers" && name != "nvidia-open":
			n.t.Errorf("%s is installed: branch %s's packages carry the branch", name, cfg.Branch)
		}
	}
	suffix := ""
	if cfg.branchNumber() < 590 {
		suffix = "-" + cfg.Branch
	}
	dkms, otherDKMS := "nvidia-dkms"+suffix+"-open", "nvidia-dkms"+suffix
	if !cfg.open() {
		dkms, otherDKMS = otherDKMS, dkms
	}
	for _, want := range []string{"libnvidia-compute" + suffix, dkms, "nvidia-utils" + suffix} {
		if _, ok := pkgs[want]; !ok {
			n.t.Errorf("%s is not installed", want)
		}
	}
	if v, ok := pkgs[otherDKMS]; ok {
		n.t.Errorf("the other flavor's %s %s is still installed", otherDKMS, v)
	}
	n.assertLockedOnBranch(cfg, names)
}

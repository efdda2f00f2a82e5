package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// This file is the harness of the real-apt scenario tests
// (realapt_driver_test.go, realapt_today_test.go): a fresh Debian 12 or 13
// root made with debootstrap (debroot, cached), NVIDIA's debian12 or
// debian13 CUDA repository modeled by nvrepo and served at NVIDIA's own
// address over HTTPS, and the driver step planned
// and applied in-process with Host.Root set to the root, so every apt-get,
// apt-mark and dpkg runs for real under chroot. After each scenario the root
// is judged from its own dpkg status and `apt-cache policy`, not from what
// the step says it did.

// aptRootSpecFor is a root of a Debian suite ("bookworm": Debian 12,
// "trixie": Debian 13) with curl and ca-certificates for the cuda-keyring
// download the step makes, as on a Debian cloud image.
func aptRootSpecFor(suite string) debroot.Spec {
	return debroot.Spec{Suite: suite, Include: []string{"ca-certificates", "curl", "gnupg"}}
}

// aptSuiteRepo is NVIDIA's CUDA repository directory for a Debian suite.
var aptSuiteRepo = map[string]string{"bookworm": "debian12", "trixie": "debian13"}

// aptNode is one scenario's root and the repository it installs from.
type aptNode struct {
	t     *testing.T
	root  string
	h     *Host
	srv   *nvrepo.Server
	repo  *nvrepo.DebianRepo
	names aptDriverNames // the names of the root's release's repository
}

// newAptNode extracts a fresh Debian 12 root and lets it reach repo at
// NVIDIA's address. debroot.New and nvrepo.Start fail the test under
// GPU_TESTBED_REQUIRED=1 when root, debootstrap or dpkg-deb are missing, and
// skip it otherwise, saying what to install.
func newAptNode(t *testing.T, srv *nvrepo.Server, repo *nvrepo.DebianRepo) *aptNode {
	t.Helper()
	return newAptNodeOn(t, "bookworm", srv, repo)
}

// newAptNodeOn is newAptNode for a Debian suite ("bookworm", "trixie").
func newAptNodeOn(t *testing.T, suite string, srv *nvrepo.Server, repo *nvrepo.DebianRepo) *aptNode {
	t.Helper()
	root := debroot.New(t, aptRootSpecFor(suite))
	srv.Mount(repo.Address(), repo.Dir())
	if err := srv.Trust(root); err != nil {
		t.Fatal(err)
	}
	h := &Host{Root: root, Runner: ExecRunner{}, GPUs: driverlessGPUs(t), Getenv: func(string) string { return "" }}
	return &aptNode{t: t, root: root, h: h, srv: srv, repo: repo, names: debianNames(aptSuiteRepo[suite])}
}

func driverSteps(cfg DriverConfig) []Step { return []Step{driverStep{cfg: cfg, arch: "amd64"}} }

// apply applies the driver step and returns its output.
func (n *aptNode) apply(cfg DriverConfig) (string, error) {
	n.t.Helper()
	var out bytes.Buffer
	_, err := Apply(context.Background(), n.h, driverSteps(cfg), ApplyOptions{Out: &out})
	return out.String(), err
}

// mustApply applies and fails the test on an error.
func (n *aptNode) mustApply(cfg DriverConfig) string {
	n.t.Helper()
	out, err := n.apply(cfg)
	if err != nil {
		n.t.Fatalf("apply branch %s %s: %v\noutput:\n%s", cfg.Branch, cfg.flavor(), err, out)
	}
	return out
}

// applyOnBranch applies cfg, checks the root is on its branch with
// exactly its lock, and that a second plan has nothing to do.
func (n *aptNode) applyOnBranch(cfg DriverConfig) string {
	n.t.Helper()
	out := n.mustApply(cfg)
	n.assertOnBranch(cfg)
	n.assertUpToDate(cfg)
	return out
}

// openModules and proprietaryModules are a branch with that kernel
// module flavor.
func openModules(branch string) DriverConfig { return DriverConfig{Branch: branch} }

func proprietaryModules(branch string) DriverConfig {
	return DriverConfig{Branch: branch, KernelModules: KernelModulesProprietary}
}

// plan is the driver step's plan as `gpu-bootstrap plan` prints it.
func (n *aptNode) plan(cfg DriverConfig) (Plan, string) {
	n.t.Helper()
	plan, err := MakePlan(context.Background(), n.h, driverSteps(cfg))
	if err != nil {
		n.t.Fatalf("plan branch %s: %v", cfg.Branch, err)
	}
	var out bytes.Buffer
	WritePlan(&out, plan)
	return plan, out.String()
}

// run runs a command in the root as a user's shell would.
func (n *aptNode) run(args ...string) (string, error) {
	cmd := exec.Command("chroot", append([]string{n.root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8", "HOME=/root"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (n *aptNode) mustRun(args ...string) string {
	n.t.Helper()
	out, err := n.run(args...)
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// installed is the root's installed stack: package -> version, from dpkg's
// own answer (dpkg-query), not the status parser under test.
func (n *aptNode) installed() map[string]string {
	n.t.Helper()
	out := n.mustRun("dpkg-query", "-W", "-f", "${db:Status-Status} ${Package} ${Version}\n")
	pkgs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "installed" && n.names.stackPackage(f[1]) {
			pkgs[f[1]] = f[2]
		}
	}
	return pkgs
}

// locks are the root's driver branch locks: the files of
// /etc/apt/preferences.d/ and the pinning packages dpkg knows in any state
// but not-installed.
func (n *aptNode) locks() []string {
	n.t.Helper()
	var locks []string
	entries, _ := os.ReadDir(filepath.Join(n.root, "etc/apt/preferences.d"))
	for _, e := range entries {
		locks = append(locks, "file "+e.Name())
	}
	// dpkg-query exits 1 when no package matches: no pinning package.
	out, _ := n.run("dpkg-query", "-W", "-f", "${db:Status-Status} ${Package}\n", "nvidia-driver-pinning-*")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] != "not-installed" {
			locks = append(locks, "package "+f[1]+" ("+f[0]+")")
		}
	}
	sort.Strings(locks)
	return locks
}

// policy is `apt-cache policy`'s installed and candidate version of each
// package.
func (n *aptNode) policy(pkgs ...string) map[string][2]string {
	n.t.Helper()
	out := n.mustRun(append([]string{"apt-cache", "policy"}, pkgs...)...)
	res := map[string][2]string{}
	var cur string
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		line := scanner.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			cur = strings.TrimSuffix(line, ":")
		case strings.HasPrefix(trimmed, "Installed: "):
			v := res[cur]
			v[0] = strings.TrimPrefix(trimmed, "Installed: ")
			res[cur] = v
		case strings.HasPrefix(trimmed, "Candidate: "):
			v := res[cur]
			v[1] = strings.TrimPrefix(trimmed, "Candidate: ")
			res[cur] = v
		}
	}
	return res
}

// assertLockedOnBranch checks that apt's candidate of each of names is on
// cfg's branch (so apt-get upgrade stays there) and that the root holds
// exactly the one lock the branch wants.
func (n *aptNode) assertLockedOnBranch(cfg DriverConfig, names []string) {
	n.t.Helper()
	for name, iv := range n.policy(names...) {
		if branchOf(iv[1]) != cfg.Branch {
			n.t.Errorf("apt-cache policy %s: installed %s, candidate %s: the lock does not hold it on branch %s", name, iv[0], iv[1], cfg.Branch)
		}
	}
	want := []string{"file " + filepath.Base(aptLockPath)}
	if cfg.branchNumber() >= firstPinningPackageBranch {
		want = []string{"file " + pinningPackage(cfg.Branch), "package " + pinningPackage(cfg.Branch) + " (installed)"}
	}
	if got := n.locks(); strings.Join(got, "; ") != strings.Join(want, "; ") {
		n.t.Errorf("locks: %v, want exactly %v", got, want)
	}
}

// assertOnBranch checks the root itself: the flavor's kernel module,
// driver and NVML packages installed, every installed stack package on the
// branch, apt's candidate of each on the branch too (so apt-get upgrade
// stays there), the other flavor's kernel modules gone, and exactly the one
// lock the branch wants.
func (n *aptNode) assertOnBranch(cfg DriverConfig) {
	n.t.Helper()
	pkgs := n.installed()
	for _, want := range []string{n.names.kernel[cfg.flavor()], n.names.driver, n.names.nvml} {
		if _, ok := pkgs[want]; !ok {
			n.t.Errorf("%s is not installed; stack: %v", want, pkgs)
		}
	}
	if v, ok := pkgs[n.names.kernel[otherFlavor(cfg)]]; ok {
		n.t.Errorf("the %s kernel modules are still installed (%s %s)", otherFlavor(cfg), n.names.kernel[otherFlavor(cfg)], v)
	}
	var names []string
	for name, v := range pkgs {
		names = append(names, name)
		if branchOf(v) != cfg.Branch {
			n.t.Errorf("%s %s is installed, not on branch %s", name, v, cfg.Branch)
		}
	}
	n.assertLockedOnBranch(cfg, names)
}

// assertUpToDate checks that a second plan has nothing to do and says so.
func (n *aptNode) assertUpToDate(cfg DriverConfig) {
	n.t.Helper()
	plan, out := n.plan(cfg)
	if !plan.Empty() {
		n.t.Errorf("plan after apply is not empty:\n%s", out)
	}
}

// partial is the PartialApplyError in err.
func partial(t *testing.T, err error) *PartialApplyError {
	t.Helper()
	var p *PartialApplyError
	if !errors.As(err, &p) {
		t.Fatalf("err = %v, want a PartialApplyError", err)
	}
	return p
}

package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// The real-dnf tests run the driver step's plan and apply against real dnf
// and rpm: Debian 12's dnf 4.14, libdnf with libmodulemd (module streams)
// and rpm 4.18, installed into a debootstrap root that is made to look
// like Rocky Linux 9 or 10 or Amazon Linux 2023 to gpu-bootstrap and to
// dnf, with NVIDIA's CUDA rpm repository modeled (internal/testbed/nvrepo
// rpm_*.go) and served at NVIDIA's address. dnf and rpm run inside the root under
// chroot, exactly as gpu-bootstrap runs them on an image (driver_dnf.go
// says why chroot and not --installroot).
//
// What "look like" takes, each a difference between Debian's dnf and a
// RHEL root, undone here:
//   - os-release with Rocky's (or AL2023's) ID, VERSION_ID and PLATFORM_ID
//     (dnf takes the module platform from PLATFORM_ID);
//   - the release package (rocky-release / system-release) in the rpm
//     database, which dnf reads $releasever from;
//   - %_dbpath /var/lib/rpm: Debian's rpm keeps its database in ~/.rpmdb
//     (/usr/lib/rpm/debian/macros), RHEL's in /var/lib/rpm;
//   - Debian's "local" dnf plugin off: RHEL does not ship it enabled, and
//     it adds an unsigned repository that gpgcheck rejects;
//   - RHEL's dnf.conf defaults (gpgcheck=1, best=True,
//     skip_if_unavailable=False);
//   - the distribution's own repository (kernel-devel, dkms, the release
//     package; EPEL on Rocky) as a file:// repository inside the root.
//
// Rocky Linux 10 ships dnf 4 too (NVIDIA's "Version locking" page lists
// RHEL 10 / Rocky 10 under "DNF 4"), so Debian's dnf 4.14 stands in for it
// as for 9. Its versionlock plugin is Debian's python3-dnf-plugins-core
// (part of dnf-plugins-core, which dnfRootSpec installs); the rpm database
// gets a marker python3-dnf-plugin-versionlock from the rocky10 model, the
// package the driver step installs on RHEL 10 when it is missing.
//
// What stays Debian: the libraries under dnf, python, and the CA bundle
// path libcurl reads (/etc/ssl/certs/ca-certificates.crt, which
// nvrepo.Trust fills). None of that changes what dnf resolves.

// dnfRootSpec is the cached Debian root with dnf and rpm.
var dnfRootSpec = debroot.Spec{Suite: "bookworm", Include: []string{"dnf", "dnf-plugins-core", "rpm", "ca-certificates"}}

// dnfTestDistro is a distribution the real-dnf tests model.
type dnfTestDistro struct {
	name      string // nvrepo's distribution model: "rocky9", "amzn2023"
	cudaRepo  string // NVIDIA's repository directory: "rhel9", "amzn2023"
	kernel    string
	osRelease string
	release   string // the release package's file name prefix
}

var (
	rocky9 = dnfTestDistro{
		name: "rocky9", cudaRepo: "rhel9", kernel: "5.14.0-427.13.1.el9_4.x86_64", release: "rocky-release-",
		osRelease: "NAME=\"Rocky Linux\"\nVERSION=\"9.4 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\nPLATFORM_ID=\"platform:el9\"\nPRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\n",
	}
	// rocky10 is Rocky Linux 10, whose branch lock is dnf versionlock
	// (driver_dnf_versionlock.go); its CUDA repository has no streams.
	rocky10 = dnfTestDistro{
		name: "rocky10", cudaRepo: "rhel10", kernel: "6.12.0-55.12.1.el10_0.x86_64", release: "rocky-release-",
		osRelease: "NAME=\"Rocky Linux\"\nVERSION=\"10.0 (Red Quartz)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"10.0\"\nPLATFORM_ID=\"platform:el10\"\nPRETTY_NAME=\"Rocky Linux 10.0 (Red Quartz)\"\n",
	}
	al2023 = dnfTestDistro{
		name: "amzn2023", cudaRepo: "amzn2023", kernel: "6.1.115-126.197.amzn2023.x86_64", release: "system-release-",
		osRelease: "NAME=\"Amazon Linux\"\nVERSION=\"2023\"\nID=\"amzn\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"2023\"\nPLATFORM_ID=\"platform:al2023\"\nPRETTY_NAME=\"Amazon Linux 2023.6.20241111\"\n",
	}
)

// rhelDNFConf is RHEL 9's /etc/dnf/dnf.conf.
const rhelDNFConf = "[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n"

// dnfTestbed is one root, its host, and the served CUDA repository.
type dnfTestbed struct {
	root   string
	host   *Host
	server *nvrepo.Server
	cuda   *nvrepo.RPMRepo
	distro dnfTestDistro
}

// newDNFTestbed makes a root that looks like d, with NVIDIA's CUDA
// repository (driver releases versions, DefaultCUDARPMVersions when none)
// served at NVIDIA's address.
func newDNFTestbed(t *testing.T, d dnfTestDistro, versions ...string) *dnfTestbed {
	t.Helper()
	server := nvrepo.Start(t)
	cuda := nvrepo.BuildCUDARPM(t, nvrepo.CUDARPMOptions{Distro: d.cudaRepo, Versions: versions})
	root := debroot.New(t, dnfRootSpec)

	const modelDir = "/srv/nvrepo-model"
	distro := nvrepo.BuildDistroRPM(t, nvrepo.DistroRPMOptions{Distro: d.name, Kernel: d.kernel, EPELBaseURL: "file://" + modelDir + "/epel"})
	copyTree(t, distro.Dir(), filepath.Join(root, modelDir, "distro"))
	repos := "[distro-model]\nname=" + d.name + " (model)\nbaseurl=file://" + modelDir + "/distro\nenabled=1\ngpgcheck=0\n"
	switch d.name {
	case "rocky9":
		copyTree(t, nvrepo.BuildEPELRPMFor(t, "9").Dir(), filepath.Join(root, modelDir, "epel"))
	case "rocky10":
		copyTree(t, nvrepo.BuildEPELRPMFor(t, "10").Dir(), filepath.Join(root, modelDir, "epel"))
	}

	etc := filepath.Join(root, "etc")
	os.Remove(filepath.Join(etc, "os-release")) // Debian's is a symlink into /usr/lib
	writeRootFile(t, root, "/etc/os-release", d.osRelease)
	writeRootFile(t, root, "/etc/rpm/macros", "%_dbpath /var/lib/rpm\n")
	writeRootFile(t, root, "/etc/dnf/dnf.conf", rhelDNFConf)
	writeRootFile(t, root, "/etc/dnf/plugins/local.conf", "[main]\nenabled = false\n")
	writeRootFile(t, root, "/etc/yum.repos.d/distro-model.repo", repos)
	if err := os.MkdirAll(filepath.Join(root, "lib/modules", d.kernel), 0o755); err != nil {
		t.Fatal(err)
	}
	releasePkgs, _ := filepath.Glob(filepath.Join(root, modelDir, "distro", d.release+"*.rpm"))
	if len(releasePkgs) != 1 {
		t.Fatalf("the %s model has %d release packages, want 1", d.name, len(releasePkgs))
	}
	chrootRun(t, root, "rpm", "-i", strings.TrimPrefix(releasePkgs[0], root))

	server.Mount("developer.download.nvidia.com/compute/cuda/repos/"+d.cudaRepo+"/x86_64/", cuda.Dir())
	if err := server.Trust(root); err != nil {
		t.Fatal(err)
	}
	// RHEL's CA bundle path, which repository files name in sslcacert
	// (NVIDIA's nvidia-container-toolkit.repo does): Trust filled
	// Debian's, which libcurl reads by default.
	bundle, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	writeRootFile(t, root, "/etc/pki/tls/certs/ca-bundle.crt", string(bundle))
	h := &Host{Root: root, Runner: ExecRunner{}, GPUs: driverlessGPUs(t)}
	return &dnfTestbed{root: root, host: h, server: server, cuda: cuda, distro: d}
}

// apply runs the driver step's apply for cfg and returns its output.
func (b *dnfTestbed) apply(t *testing.T, cfg DriverConfig) (string, error) {
	t.Helper()
	var out bytes.Buffer
	_, err := Apply(context.Background(), b.host, []Step{driverStep{cfg: cfg, arch: "amd64"}}, ApplyOptions{Out: &out})
	return out.String(), err
}

// mustApply applies cfg and fails the test on an error.
func (b *dnfTestbed) mustApply(t *testing.T, cfg DriverConfig) string {
	t.Helper()
	out, err := b.apply(t, cfg)
	if err != nil {
		t.Fatalf("apply %+v: %v\n%s", cfg, err, out)
	}
	return out
}

// plan is the driver step's plan for cfg.
func (b *dnfTestbed) plan(t *testing.T, cfg DriverConfig) []Change {
	t.Helper()
	changes, err := driverStep{cfg: cfg, arch: "amd64"}.Plan(context.Background(), b.host)
	if err != nil {
		t.Fatalf("plan %+v: %v", cfg, err)
	}
	return changes
}

// installed is the root's NVIDIA packages as rpm lists them,
// "name-version-release", sorted.
func (b *dnfTestbed) installed(t *testing.T) []string {
	t.Helper()
	out := chrootRun(t, b.root, "rpm", "-qa", "--queryformat", "%{NAME}-%{VERSION}-%{RELEASE}\n")
	var pkgs []string
	for _, line := range strings.Fields(out) {
		if strings.Contains(line, "nvidia") || strings.HasPrefix(line, "cuda-drivers") {
			pkgs = append(pkgs, line)
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

// stream is the nvidia-driver module's enabled stream, "" when none.
func (b *dnfTestbed) stream(t *testing.T) string {
	t.Helper()
	s, err := readDNFModuleStream(b.host)
	if err != nil {
		t.Fatal(err)
	}
	if !s.enabled() {
		return ""
	}
	return s.Stream
}

// wantStack checks that the root holds exactly want of NVIDIA's packages,
// under stream, and that the plan for cfg is empty: the stack, the lock
// and the plan agree.
func (b *dnfTestbed) wantStack(t *testing.T, cfg DriverConfig, stream string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := b.installed(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("installed:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got := b.stream(t); got != stream {
		t.Errorf("enabled stream %q, want %q", got, stream)
	}
	if changes := b.plan(t, cfg); len(changes) != 0 {
		t.Errorf("plan after apply: %v, want no changes", changeCommands(changes))
	}
}

// chrootRun runs a command inside root and returns its stdout.
func chrootRun(t *testing.T, root string, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("chroot", append([]string{root, name}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chroot %s %s %s: %v\n%s%s", root, name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func writeRootFile(t *testing.T, root, path, content string) {
	t.Helper()
	full := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("copying %s to %s: %v: %s", from, to, err, out)
	}
}

// rpmNames spells packages of one release as installed() lists them.
func rpmNames(version, dist string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s-%s-1.%s", n, version, dist)
	}
	return out
}

package nvrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// This file hands out model rpm repositories: built once into the testbed
// cache (under a file lock; a half-built one is never used), then copied
// for each test, which may add packages to its copy.

// rpmModelVersion changes whenever the packages or metadata the model
// builds change, so cached repositories of an older model are not used.
const rpmModelVersion = "4"

// RPMRepo is one model rpm repository in a test's own directory.
type RPMRepo struct {
	dir  string
	home string // the signing key's gpg home
	rpmLayout
	pkgs []RPMPackage
}

// rpmLayout is what a model repository is built from and where its parts
// go.
type rpmLayout struct {
	name    string // the cache entry's name: "cuda-rhel9"
	dist    string // the release suffix of added driver packages: "el9"
	modules bool   // module streams (the CUDA repository)
	// pkgDir is where the packages and repodata/ go, relative to Dir:
	// "" for the CUDA repositories, "stable/rpm/x86_64" for the toolkit's.
	pkgDir string
	// keyFile is where the public key goes, relative to Dir; "" for none.
	keyFile string
	// signRepomd adds repodata/repomd.xml.asc, a detached signature of
	// the metadata, for repositories with repo_gpgcheck=1.
	signRepomd bool
	// extra are more files, relative to Dir.
	extra map[string]string
}

// Dir is the repository's directory, the one to Mount: the packages,
// repodata/, and the .repo file and signing key where the repository
// keeps them.
func (r *RPMRepo) Dir() string { return r.dir }

// CUDARPMOptions chooses the CUDA repository to model.
type CUDARPMOptions struct {
	// Distro is the repository's directory name: "rhel9" (default),
	// "rhel8", "rhel10" (no module streams) or "amzn2023".
	Distro string
	// Versions are the driver releases; DefaultCUDARPMVersions by default.
	Versions []string
}

// rpmDist is the release suffix NVIDIA's packages carry for a repository.
func rpmDist(distro string) (string, error) {
	switch distro {
	case "rhel8":
		return "el8", nil
	case "rhel9":
		return "el9", nil
	case "rhel10":
		return "el10", nil
	case "amzn2023":
		return "amzn2023", nil
	}
	return "", fmt.Errorf("nvrepo: no rpm model of NVIDIA's CUDA repository for %q (rhel8, rhel9, rhel10 or amzn2023)", distro)
}

// BuildCUDARPM returns a fresh copy of the model of NVIDIA's CUDA rpm
// repository for opts.Distro: the driver packages of opts.Versions, signed,
// indexed, with the nvidia-driver module's streams, the cuda-<distro>.repo
// file and the D42D0685.pub key. Mount its Dir at
// developer.download.nvidia.com/compute/cuda/repos/<distro>/x86_64/.
// Without the rpm tools it fails the test under GPU_TESTBED_REQUIRED=1,
// skips otherwise.
func BuildCUDARPM(t testing.TB, opts CUDARPMOptions) *RPMRepo {
	t.Helper()
	if opts.Distro == "" {
		opts.Distro = "rhel9"
	}
	if len(opts.Versions) == 0 {
		opts.Versions = DefaultCUDARPMVersions
		if opts.Distro == "rhel10" {
			opts.Versions = RHEL10CUDARPMVersions
		}
	}
	dist, err := rpmDist(opts.Distro)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []RPMPackage
	for _, v := range opts.Versions {
		pkgs = append(pkgs, cudaDriverPackages(v, dist)...)
	}
	return cachedRPMRepo(t, rpmLayout{
		name: "cuda-" + opts.Distro, dist: dist, modules: opts.Distro != "rhel10", keyFile: rpmKeyFileName,
		extra: map[string]string{"cuda-" + opts.Distro + ".repo": cudaRPMRepoFile(opts.Distro)},
	}, pkgs)
}

// AddDriverVersions adds driver releases to the repository (a new branch
// or patch release appears upstream): builds and signs their packages
// with the repository's key, and re-indexes it with the new streams.
func (r *RPMRepo) AddDriverVersions(versions ...string) error {
	var pkgs []RPMPackage
	for _, v := range versions {
		pkgs = append(pkgs, cudaDriverPackages(v, r.dist)...)
	}
	return r.AddPackages(pkgs...)
}

// AddPackages builds, signs and adds packages, then re-indexes.
func (r *RPMRepo) AddPackages(pkgs ...RPMPackage) error {
	r.pkgs = append(r.pkgs, pkgs...)
	return r.rpmLayout.fill(context.Background(), r.dir, &rpmSigner{home: r.home}, pkgs, r.pkgs)
}

// fill builds and signs pkgs into dir, and indexes the repository for all
// (pkgs and those already there).
func (l rpmLayout) fill(ctx context.Context, dir string, signer *rpmSigner, pkgs, all []RPMPackage) error {
	pkgDir := filepath.Join(dir, l.pkgDir)
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return err
	}
	if err := buildRPMs(ctx, pkgs, pkgDir, signer); err != nil {
		return err
	}
	var modules []byte
	if l.modules {
		modules = cudaRPMStreamsYAML(all)
	}
	if err := indexRPMRepo(ctx, pkgDir, modules); err != nil {
		return err
	}
	if l.signRepomd {
		return signer.detachSign(ctx, filepath.Join(pkgDir, "repodata", "repomd.xml"))
	}
	return nil
}

// cachedRPMRepo builds the repository into the cache once and copies it
// into a test directory. The copy's gpg home is its own, so adding
// packages never touches the cache.
func cachedRPMRepo(t testing.TB, l rpmLayout, pkgs []RPMPackage) *RPMRepo {
	t.Helper()
	if missing := rpmToolsMissing(); len(missing) > 0 {
		msg := fmt.Sprintf("nvrepo: the rpm repository model needs %s: apt-get install rpm createrepo-c gnupg", strings.Join(missing, ", "))
		if testbed.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cache, err := testbed.CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := l.name
	key := rpmRepoKey(l, pkgs)
	base := filepath.Join(cache, "rpmrepos")
	cached := filepath.Join(base, name+"-"+key)
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cached); err != nil {
		unlock, err := lockRPMCache(filepath.Join(base, name+"-"+key+".lock"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(cached); err != nil { // not built by another process meanwhile
			if err := buildRPMRepo(cached, l, pkgs); err != nil {
				unlock()
				t.Fatal(err)
			}
		}
		unlock()
	}
	dir := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", cached, dir).CombinedOutput(); err != nil {
		t.Fatalf("nvrepo: copying the cached %s repository: %v: %s", name, err, out)
	}
	// The gpg home leaves the repository (it is no part of what the
	// server serves) for a short path of its own: gpg-agent's socket lives
	// in it, and a unix socket's path is limited to 107 bytes, which a
	// test's temporary directory can exceed.
	home, err := shortGPGHome(t)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(dir, ".gnupg")+"/.", home).CombinedOutput(); err != nil {
		t.Fatalf("nvrepo: copying the signing key: %v: %s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".gnupg")); err != nil {
		t.Fatal(err)
	}
	return &RPMRepo{dir: dir, home: home, rpmLayout: l, pkgs: append([]RPMPackage(nil), pkgs...)}
}

// buildRPMRepo builds into a work directory beside path and renames it
// into place when complete.
func buildRPMRepo(path string, l rpmLayout, pkgs []RPMPackage) error {
	ctx := context.Background()
	work, err := os.MkdirTemp(filepath.Dir(path), ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	home, err := os.MkdirTemp("", "nvrepo-gpg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	signer, err := newRPMSigner(ctx, home)
	if err != nil {
		return err
	}
	if l.keyFile != "" {
		if err := signer.exportKey(ctx, filepath.Join(work, l.keyFile)); err != nil {
			return err
		}
	}
	if err := l.fill(ctx, work, signer, pkgs, pkgs); err != nil {
		return err
	}
	// The key is kept with the cached repository (without the agent's
	// sockets) for tests that add packages later.
	signer.stopAgent()
	sockets, _ := filepath.Glob(filepath.Join(home, "S.*"))
	for _, socket := range sockets {
		os.Remove(socket)
	}
	if out, err := exec.Command("cp", "-a", home, filepath.Join(work, ".gnupg")).CombinedOutput(); err != nil {
		return fmt.Errorf("nvrepo: keeping the signing key: %v: %s", err, out)
	}
	for name, content := range l.extra {
		path := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return os.Rename(work, path)
}

// rpmRepoKey names a repository's cache entry by everything it is built
// from.
func rpmRepoKey(l rpmLayout, pkgs []RPMPackage) string {
	h := sha256.New()
	extra := l.extra
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%s\x00%s\x00%v\x00%d\x00", rpmModelVersion, l.name, l.modules, l.pkgDir, l.keyFile, l.signRepomd, len(pkgs))
	for _, p := range pkgs {
		fmt.Fprintf(h, "%#v\x00", p)
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(h, "%s=%s\x00", name, extra[name])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// lockRPMCache takes an exclusive flock(2) on path, waiting for another
// holder; the kernel releases it if the process dies.
func lockRPMCache(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nvrepo: opening the lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("nvrepo: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// shortGPGHome is a gpg home directory under /tmp, removed (after its
// agent is stopped) when the test ends.
func shortGPGHome(t testing.TB) (string, error) {
	home, err := os.MkdirTemp("", "nvrepo-gpg-") //nolint:usetesting // t.TempDir's path can be too long for the agent's socket
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		(&rpmSigner{home: home}).stopAgent()
		os.RemoveAll(home)
	})
	return home, nil
}

package nvrepo

import (
	"bytes"
	"compress/gzip"
	"crypto/md5" //nolint:gosec // apt's Release format lists MD5Sum
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// DebianRepo is one signed flat apt repository ("deb URL /", see
// sources.list(5) "flat repository format"): the .deb files, Packages and
// Packages.gz, Release with the indexes' sizes and MD5Sum/SHA256, InRelease
// (clearsigned) and Release.gpg (detached), as
// https://wiki.debian.org/DebianRepository/Format#Flat_Repository_Format
// describes and NVIDIA's CUDA and libnvidia-container repositories are laid
// out. Dir is mounted at Address on the Server; the flat repository is Dir
// itself or a subdirectory of it (the toolkit's stable/deb/amd64).
type DebianRepo struct {
	mu      sync.Mutex
	dir     string // what Mount serves
	flat    string // the flat repository directory, dir or below it
	address string // host/prefix NVIDIA serves dir at
	origin  string // Release Origin and Label
	label   string
	key     *SigningKey
	pkgs    []DebPackage
	lastMod time.Time
}

// Dir is the directory to Mount at Address.
func (r *DebianRepo) Dir() string { return r.dir }

// Address is NVIDIA's host and path prefix for Dir, the hostPrefix of
// Server.Mount: s.Mount(r.Address(), r.Dir()).
func (r *DebianRepo) Address() string { return r.address }

// Key is the key the repository is signed with now.
func (r *DebianRepo) Key() *SigningKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.key
}

// Packages lists the repository's packages.
func (r *DebianRepo) Packages() []DebPackage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]DebPackage(nil), r.pkgs...)
}

// newDebianRepo makes an empty repository in a test directory and adds
// pkgs.
func newDebianRepo(t testing.TB, address, subdir, origin, label string, key *SigningKey, pkgs []DebPackage) *DebianRepo {
	t.Helper()
	if key == nil {
		var err error
		if key, err = processKey(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	r := &DebianRepo{dir: dir, flat: filepath.Join(dir, subdir), address: address, origin: origin, label: label, key: key}
	if err := os.MkdirAll(r.flat, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.AddPackages(pkgs...); err != nil {
		t.Fatal(err)
	}
	return r
}

// AddPackages builds the packages, adds them (replacing a package of the
// same name, version and architecture), then re-indexes and re-signs, as
// when a new release appears in NVIDIA's repository.
func (r *DebianRepo) AddPackages(pkgs ...DebPackage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pkgs {
		built, err := buildDeb(p)
		if err != nil {
			return err
		}
		target := filepath.Join(r.flat, p.fileName())
		_ = os.Remove(target)
		if err := copyFile(built, target); err != nil {
			return fmt.Errorf("nvrepo: adding %s: %w", p.fileName(), err)
		}
		replaced := false
		for i, q := range r.pkgs {
			if q.Name == p.Name && q.Version == p.Version && q.Arch == p.Arch {
				r.pkgs[i], replaced = p, true
			}
		}
		if !replaced {
			r.pkgs = append(r.pkgs, p)
		}
	}
	return r.index()
}

// Resign signs the repository with another key (its packages unchanged),
// for "the key is no longer trusted" tests.
func (r *DebianRepo) Resign(key *SigningKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.key = key
	return r.index()
}

// index writes Packages, Packages.gz and Release, and signs Release.
func (r *DebianRepo) index() error {
	var packages bytes.Buffer
	for _, p := range r.pkgs {
		data, err := os.ReadFile(filepath.Join(r.flat, p.fileName()))
		if err != nil {
			return err
		}
		for _, f := range p.controlFields() {
			if f[0] == "Description" {
				continue
			}
			fmt.Fprintf(&packages, "%s: %s\n", f[0], f[1])
		}
		md5sum := md5.Sum(data) //nolint:gosec // the index format's field
		sha := sha256.Sum256(data)
		fmt.Fprintf(&packages, "Filename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n", p.fileName(), len(data), hex.EncodeToString(md5sum[:]), hex.EncodeToString(sha[:]))
		for _, f := range p.controlFields() {
			if f[0] == "Description" {
				fmt.Fprintf(&packages, "Description: %s\n", f[1])
			}
		}
		packages.WriteString("\n")
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(packages.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	indexes := []struct {
		name string
		data []byte
	}{{"Packages", packages.Bytes()}, {"Packages.gz", gz.Bytes()}}

	// Release: fields of the flat format's Release file (Origin, Label,
	// Date, and per-index checksums), as NVIDIA's repositories serve them.
	var release strings.Builder
	fmt.Fprintf(&release, "Origin: %s\nLabel: %s\nDate: %s\n", r.origin, r.label, time.Now().UTC().Format(time.RFC1123Z))
	for _, hash := range []struct {
		field string
		sum   func([]byte) string
	}{
		{"MD5Sum", func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }}, //nolint:gosec // the format's field
		{"SHA256", func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }},
	} {
		fmt.Fprintf(&release, "%s:\n", hash.field)
		for _, ix := range indexes {
			fmt.Fprintf(&release, " %s %16d %s\n", hash.sum(ix.data), len(ix.data), ix.name)
		}
	}
	for _, ix := range indexes {
		if err := os.WriteFile(filepath.Join(r.flat, ix.name), ix.data, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(r.flat, "Release"), []byte(release.String()), 0o644); err != nil {
		return err
	}
	if err := r.key.signRelease(r.flat); err != nil {
		return err
	}
	return r.touch()
}

// writeFiles writes files (relative path -> content) under dir.
func writeFiles(dir string, files map[string][]byte) error {
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// touch gives the index files a modification time later than the last
// one's by at least a second: apt asks with If-Modified-Since (one-second
// resolution), and a re-index within the same second must not be answered
// 304 Not Modified.
func (r *DebianRepo) touch() error {
	mod := time.Now().Truncate(time.Second)
	if !mod.After(r.lastMod) {
		mod = r.lastMod.Add(time.Second)
	}
	r.lastMod = mod
	for _, name := range []string{"Packages", "Packages.gz", "Release", "InRelease", "Release.gpg"} {
		if err := os.Chtimes(filepath.Join(r.flat, name), mod, mod); err != nil {
			return err
		}
	}
	return nil
}

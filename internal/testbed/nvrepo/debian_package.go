package nvrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// DebPackage is one binary package of a model repository. The relation
// fields take deb-control(5) syntax ("a (>= 1), b | c"). Built as a real
// .deb with dpkg-deb: control + the listed files, no maintainer scripts.
type DebPackage struct {
	Name, Version, Arch                            string
	Depends, Conflicts, Provides, Replaces, Breaks string
	Files                                          map[string][]byte /* path in the root -> content */
	Description                                    string

	// Source is the source package name (deb-control(5) "Source"), which
	// apt_preferences(5) "src:" patterns match; empty means Name.
	Source string
	// Recommends and PreDepends are further relations.
	Recommends, PreDepends string
}

// debMaintainer is the Maintainer of NVIDIA's packages
// (NVIDIA/nvidia-container-toolkit packaging/debian/control).
const debMaintainer = "NVIDIA CORPORATION <cudatools@nvidia.com>"

// fileName is the pool file name: name_version_arch.deb without the epoch
// (Debian policy 5.6.12 and dpkg-name(1)).
func (p DebPackage) fileName() string {
	version := p.Version
	if _, after, ok := strings.Cut(version, ":"); ok {
		version = after
	}
	return fmt.Sprintf("%s_%s_%s.deb", p.Name, version, p.Arch)
}

// controlFields are the package's control fields in Debian's usual order,
// without the index-only fields (Filename, Size, hashes).
func (p DebPackage) controlFields() [][2]string {
	description := p.Description
	if description == "" {
		description = "model of NVIDIA's " + p.Name + " package (gpu-testbed)"
	}
	fields := [][2]string{
		{"Package", p.Name},
		{"Source", p.Source},
		{"Version", p.Version},
		{"Architecture", p.Arch},
		{"Maintainer", debMaintainer},
		{"Installed-Size", fmt.Sprint(installedSizeKiB(p.Files))},
		{"Pre-Depends", p.PreDepends},
		{"Depends", p.Depends},
		{"Recommends", p.Recommends},
		{"Conflicts", p.Conflicts},
		{"Breaks", p.Breaks},
		{"Replaces", p.Replaces},
		{"Provides", p.Provides},
		{"Section", "misc"},
		{"Priority", "optional"},
		{"Description", description},
	}
	return slices.DeleteFunc(fields, func(f [2]string) bool { return f[1] == "" })
}

func installedSizeKiB(files map[string][]byte) int {
	total := 0
	for _, c := range files {
		total += (len(c) + 1023) / 1024
	}
	return max(total, 1)
}

func (p DebPackage) check() error {
	switch {
	case p.Name == "" || p.Version == "":
		return fmt.Errorf("nvrepo: DebPackage %q %q: Name and Version are required", p.Name, p.Version)
	case p.Arch == "":
		return fmt.Errorf("nvrepo: DebPackage %s: Arch is required (\"amd64\", \"arm64\" or \"all\")", p.Name)
	}
	for path := range p.Files {
		if !strings.HasPrefix(path, "/") || strings.Contains(path, "..") || strings.HasPrefix(path, "/DEBIAN") {
			return fmt.Errorf("nvrepo: DebPackage %s: Files key %q must be an absolute path in the root", p.Name, path)
		}
	}
	return nil
}

// key identifies a package's build inputs, for the .deb cache.
func (p DebPackage) key() string {
	h := sha256.New()
	fmt.Fprintln(h, "deb-model-1")
	for _, f := range p.controlFields() {
		fmt.Fprintf(h, "%s: %s\n", f[0], f[1])
	}
	paths := make([]string, 0, len(p.Files))
	for path := range p.Files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		fmt.Fprintf(h, "%s %d\n", path, len(p.Files[path]))
		h.Write(p.Files[path])
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// buildDeb returns the path of the package's .deb in the testbed cache,
// building it with dpkg-deb the first time. Entries are content-addressed
// and appear by rename, so concurrent builders need no lock.
func buildDeb(p DebPackage) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	cache, err := testbed.CacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(cache, "nvrepo", "debs", p.key(), p.fileName())
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(filepath.Dir(final), "stage-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	root := filepath.Join(stage, "root")
	if err := writeDebTree(root, p); err != nil {
		return "", err
	}
	tmp := filepath.Join(stage, p.fileName())
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, tmp)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nvrepo: dpkg-deb --build %s: %w: %s (install dpkg-dev's dpkg-deb)", p.Name, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	return final, nil
}

// writeDebTree lays out DEBIAN/control, DEBIAN/conffiles and the files.
// Files under /etc are conffiles, as debhelper's dh_installdeb(1) marks
// them: dpkg keeps them when the package is removed, not purged.
func writeDebTree(root string, p DebPackage) error {
	var control strings.Builder
	for _, f := range p.controlFields() {
		fmt.Fprintf(&control, "%s: %s\n", f[0], f[1])
	}
	if err := os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "DEBIAN/control"), []byte(control.String()), 0o644); err != nil {
		return err
	}
	var conffiles []string
	for path, content := range p.Files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(string(content), "#!") {
			mode = 0o755
		}
		target := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, content, mode); err != nil {
			return err
		}
		if err := os.Chmod(target, mode); err != nil { // umask
			return err
		}
		if strings.HasPrefix(path, "/etc/") {
			conffiles = append(conffiles, path)
		}
	}
	if len(conffiles) > 0 {
		slices.Sort(conffiles)
		if err := os.WriteFile(filepath.Join(root, "DEBIAN/conffiles"), []byte(strings.Join(conffiles, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst. Not a hard link: a test that damages a
// repository's file must not damage the cache.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

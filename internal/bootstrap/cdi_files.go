package bootstrap

import (
	"debug/elf"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// This file finds the driver's files under Host.Root for the CDI spec. Every
// path it returns is a path on the target ("/usr/lib/x86_64-linux-gnu/…"),
// never one prefixed with the root, because the spec is read by the
// container engine on the target.

// glob is filepath.Glob on the target: pattern and results are target
// paths, sorted. The root itself is never read as a pattern, so a root
// such as /mnt/image[1] works.
func (h *Host) glob(pattern string) []string {
	matches, err := fs.Glob(rootFS{h}, strings.TrimPrefix(path.Clean(pattern), "/"))
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, "/"+m)
	}
	sort.Strings(out)
	return out
}

// resolve follows the symbolic links of a target path the way the target
// would (resolveInRoot: absolute link targets taken from Host.Root, so a
// /lib -> usr/lib link in an image resolves inside the image) and requires
// the file at the end to exist: it names the real file behind a library's
// links.
func (h *Host) resolve(target string) (string, error) {
	root := h.Root
	if h.live() {
		root = "/"
	}
	res, err := resolveInRoot(root, target)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(root, res.InRoot)); err != nil {
		return "", err
	}
	return res.InRoot, nil
}

// isSymlink reports whether a target path is a symbolic link.
func (h *Host) isSymlink(target string) bool {
	info, err := os.Lstat(h.linkPath(target))
	return err == nil && info.Mode()&os.ModeSymlink != 0
}

// isExecutableFile reports whether a target path is a regular file (after
// links) with an execute bit.
func (h *Host) isExecutableFile(target string) bool {
	info, err := os.Stat(h.Path(target))
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// soname is a driver library's SONAME ("libcuda.so.1" for
// libcuda.so.550.54.15): the ELF DT_SONAME when the file is an ELF object,
// otherwise the name of the symbolic link ldconfig made for it in the same
// directory, "" when there is neither.
func (h *Host) soname(lib string) string {
	if f, err := elf.Open(h.Path(lib)); err == nil {
		defer f.Close()
		if names, err := f.DynString(elf.DT_SONAME); err == nil && len(names) > 0 {
			return names[0]
		}
		return ""
	}
	dir, name := path.Split(lib)
	stem, _, ok := strings.Cut(name, ".so.")
	if !ok {
		return ""
	}
	for _, candidate := range h.glob(path.Join(dir, stem+".so.*")) {
		suffix := strings.TrimPrefix(path.Base(candidate), stem+".so.")
		if strings.Contains(suffix, ".") || !h.isSymlink(candidate) {
			continue
		}
		if dest, err := os.Readlink(h.linkPath(candidate)); err == nil && path.Base(dest) == name {
			return path.Base(candidate)
		}
	}
	return ""
}

// soLink is the development link name of a SONAME: "libcuda.so" for
// "libcuda.so.1".
func soLink(soname string) string {
	if i := strings.Index(soname, ".so"); i >= 0 {
		return soname[:i+len(".so")]
	}
	return ""
}

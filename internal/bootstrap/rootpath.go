package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// This file keeps every file the bootstrap touches inside Host.Root. A path
// on the target ("/etc/containerd/config.toml") is resolved the way the
// kernel would resolve it after chroot(Root): each symbolic link is followed
// (an absolute target from the root, a relative one from the link's
// directory) and ".." stops at the root. Only then is it joined to Root, so
// a link such as /etc/containerd/config.toml -> /usr/share/containerd/config.toml
// in an image reads and writes the image's file, never the build host's.
//
// This follows github.com/cyphar/filepath-securejoin's SecureJoin: missing
// components are taken as they are (the file may be about to be created),
// and a loop of links is an error. Like SecureJoin it is not safe against a
// process that swaps links under the root while the bootstrap runs; nothing
// but the bootstrap should be changing an image root it works on.

// maxSymlinks bounds the links one path may follow, as the kernel's
// MAXSYMLINKS (40) does; more is reported as a loop.
const maxSymlinks = 40

// symlinkHop is one link followed while resolving a path: the link (a
// target path) and what it points at, as stored.
type symlinkHop struct {
	Link   string
	Target string
}

// resolvedPath is a target path resolved inside a root.
type resolvedPath struct {
	// InRoot is the resolved path as the target sees it: absolute, clean,
	// free of links except where a component does not exist yet.
	InRoot string
	// Links are the links followed, in order; empty for a plain path.
	Links []symlinkHop
}

// resolveInRoot resolves target inside root as a chroot would. root must be
// an existing directory; it may itself be reached through links (it is the
// operator's choice and is used as given).
func resolveInRoot(root, target string) (resolvedPath, error) {
	var res resolvedPath
	current := "/"
	rest := target
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		switch part {
		case "", ".":
			continue
		case "..":
			current = path.Dir(current) // path.Dir("/") is "/": clamped
			continue
		}
		next := path.Join(current, part)
		info, err := os.Lstat(filepath.Join(root, next))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			// Not there (yet): the rest is taken literally, as open(O_CREAT)
			// would for the last component.
			current = next
			continue
		case err != nil:
			return res, fmt.Errorf("resolving %s under %s: %w", target, root, err)
		case info.Mode()&fs.ModeSymlink == 0:
			current = next
			continue
		}
		if len(res.Links) >= maxSymlinks {
			return res, fmt.Errorf("resolving %s under %s: more than %d symbolic links (a loop?) at %s; fix the links in the root", target, root, maxSymlinks, next)
		}
		dest, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return res, fmt.Errorf("resolving %s under %s: %w", target, root, err)
		}
		res.Links = append(res.Links, symlinkHop{Link: next, Target: dest})
		if path.IsAbs(dest) {
			current = "/"
		}
		if rest == "" {
			rest = dest
		} else {
			rest = dest + "/" + rest
		}
	}
	res.InRoot = current
	return res, nil
}

// resolvePath maps a target path to the path this process opens, with the
// links it follows. On the live machine (Root "/") there is nothing to be
// confined to and the kernel resolves the links itself, so the path is only
// cleaned.
func (h *Host) resolvePath(target string) (string, resolvedPath, error) {
	if h.live() {
		clean := filepath.Clean(target)
		return clean, resolvedPath{InRoot: clean}, nil
	}
	res, err := resolveInRoot(h.Root, target)
	if err != nil {
		return "", res, err
	}
	return filepath.Join(h.Root, res.InRoot), res, nil
}

// linkPath maps a target path to the path this process opens without
// following a link in its last component, for Lstat and Readlink: the
// directories leading to it are resolved inside the root.
func (h *Host) linkPath(target string) string {
	if h.live() {
		return filepath.Clean(target)
	}
	clean := path.Clean("/" + target)
	if clean == "/" {
		return h.Root
	}
	return filepath.Join(h.Path(path.Dir(clean)), path.Base(clean))
}

// unresolvable is where Path points a path that cannot be resolved (a loop
// of links): a name under the root that does not exist, so an open fails
// there instead of following the links on the build host. ReadFile, Exists
// and writeFile report the real error.
const unresolvable = ".gpu-bootstrap-unresolvable-path"

// describeLinks says, for a plan, which links a write goes through and
// which file it lands in: "/etc/containerd/config.toml goes through the
// symbolic link /etc/containerd/config.toml -> /usr/share/containerd/config.toml;
// the link is kept and /usr/share/containerd/config.toml is written".
func describeLinks(target string, res resolvedPath) string {
	if len(res.Links) == 0 {
		return ""
	}
	hops := make([]string, 0, len(res.Links))
	for _, hop := range res.Links {
		hops = append(hops, hop.Link+" -> "+hop.Target)
	}
	what := "the symbolic link"
	if len(hops) > 1 {
		what = "the symbolic links"
	}
	return fmt.Sprintf("%s goes through %s %s; the link is kept and %s is written", target, what, strings.Join(hops, ", "), res.InRoot)
}

// requireRegular refuses a target that is there but is not a regular file
// (a directory, a device, a pipe): the bootstrap reads and rewrites only
// files, and would otherwise block on a pipe, read /dev/zero for ever or
// rename a file over a device node. A link to /dev/null (systemd's way to
// mask a drop-in) may be read, as empty, but is never written through.
func requireRegular(target string, res resolvedPath, info fs.FileInfo, writing bool) error {
	if info.Mode().IsRegular() {
		return nil
	}
	if isNullDevice(info) {
		if !writing {
			return nil
		}
		return fmt.Errorf("%s is masked (it resolves to the null device %s); the bootstrap does not write through it: remove the link if the file should exist, and run again", target, res.InRoot)
	}
	kind := "not a regular file"
	switch mode := info.Mode(); {
	case mode.IsDir():
		kind = "a directory"
	case mode&fs.ModeCharDevice != 0:
		kind = "a character device"
	case mode&fs.ModeDevice != 0:
		kind = "a block device"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	}
	where := target
	if len(res.Links) > 0 {
		where = fmt.Sprintf("%s (a symbolic link to %s)", target, res.InRoot)
	}
	return fmt.Errorf("%s is %s, not a file the bootstrap can read or rewrite; replace it with a regular file (or remove it) and run again", where, kind)
}

// isNullDevice reports whether info is a character device with /dev/null's
// number (1, 3: makedev encodes it as 0x103 on Linux).
func isNullDevice(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && info.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0x103
}

// CheckRoot reports a --root that cannot be a target: missing or not a
// directory.
func CheckRoot(root string) error {
	if isLiveRoot(root) {
		return nil
	}
	info, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--root %s does not exist; give the directory of the image or chroot to configure (or / for this machine)", root)
	case err != nil:
		return fmt.Errorf("--root %s: %w", root, err)
	case !info.IsDir():
		return fmt.Errorf("--root %s is not a directory; give the directory of the image or chroot to configure", root)
	}
	return nil
}

// rootFS is the target's file system as an fs.FS (for fs.Glob): every name
// is resolved inside the root, where os.DirFS would follow an absolute link
// such as /lib -> /usr/lib out to the build host.
type rootFS struct{ h *Host }

func (r rootFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return os.Open(r.h.Path("/" + name))
}

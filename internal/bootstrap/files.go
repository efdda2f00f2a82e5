package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// BackupDir is where apply keeps the files it replaces, under a directory per
// run named by its UTC start time, at the file's own path:
// /var/backups/gpu-bootstrap/20261122T071800Z/etc/containerd/config.toml.
// A second run within the same second gets 20261122T071800Z-2, and so on
// (see backup.go); a backup is never overwritten.
// Backups never sit next to the file, where a drop-in directory would load
// them.
const BackupDir = "/var/backups/gpu-bootstrap"

// FileChange is the new content of one target file.
type FileChange struct {
	Path string      // absolute path on the target
	Old  []byte      // current content; nil when the file does not exist
	New  []byte      // content after apply
	Mode fs.FileMode // mode of a new file; an existing file keeps its own
}

// Created reports whether the file does not exist yet.
func (f *FileChange) Created() bool { return f.Old == nil }

// ParseError is a target file the bootstrap cannot read. The file is left
// untouched.
type ParseError struct {
	Path   string
	Line   int // 1-based; 0 when unknown
	Column int
	Err    error
}

func (e *ParseError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
		if e.Column > 0 {
			where = fmt.Sprintf("%s:%d", where, e.Column)
		}
	}
	return fmt.Sprintf("%s: %v (the file was left unchanged; fix it by hand and run again)", where, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// writeFile puts change.New at change.Path atomically: a temporary file in
// the same directory, fsynced, given the old file's mode and owner (or
// change.Mode), then renamed over the target. The path is resolved inside
// Host.Root (see rootpath.go): a symbolic link is followed to its target in
// the root and kept. The old content, if any, is copied to backupRoot first
// (see saveBackup); when the write then fails the copy is removed again, as
// the file is unchanged. Identical content writes nothing.
func (h *Host) writeFile(change *FileChange, backupRoot string) (backup string, err error) {
	target, res, err := h.resolvePath(change.Path)
	if err != nil {
		return "", err
	}
	mode := change.Mode
	if mode == 0 {
		mode = 0o644
	}
	uid, gid := -1, -1
	info, statErr := os.Stat(target)
	switch {
	case statErr == nil:
		if err := requireRegular(change.Path, res, info, true); err != nil {
			return "", err
		}
		// (readErr, not err: the deferred clean-up below must see the
		// function's own error.)
		current, readErr := os.ReadFile(target)
		if readErr != nil {
			return "", readErr
		}
		if bytes.Equal(current, change.New) {
			return "", nil
		}
		if change.Old != nil && !bytes.Equal(current, change.Old) {
			return "", fmt.Errorf("%s changed since it was planned; run again", change.Path)
		}
		mode = info.Mode().Perm()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
		saved, created, saveErr := h.saveBackup(backupRoot, change.Path, current, mode)
		if saveErr != nil {
			return "", fmt.Errorf("backing up %s (the file was left unchanged): %w", change.Path, saveErr)
		}
		backup = saved
		defer func() {
			if err != nil && created {
				h.dropBackup(saved)
			}
		}()
	case errors.Is(statErr, fs.ErrNotExist):
		if change.Old != nil {
			return "", fmt.Errorf("%s was removed since it was planned; run again", change.Path)
		}
	default:
		return "", statErr
	}
	if err := writeAtomic(target, change.New, mode, uid, gid); err != nil {
		return "", fmt.Errorf("writing %s (the file was left unchanged): %w", change.Path, err)
	}
	return backup, nil
}

// writeAtomic writes data to path through a temporary file and a rename, so
// a reader sees the old file or the new one, never half of one.
func writeAtomic(path string, data []byte, mode fs.FileMode, uid, gid int) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".gpu-bootstrap-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if uid >= 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		if err := tmp.Chown(uid, gid); err != nil {
			tmp.Close()
			return fmt.Errorf("keeping the owner %d:%d: %w", uid, gid, err)
		}
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

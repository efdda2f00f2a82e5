package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"
)

// This file keeps apply's backups (see BackupDir): one directory per run,
// named by the run's start second and made unique with a -2, -3… suffix,
// and backup files created exclusively, so no run ever overwrites what an
// earlier run kept. Two applies within one second used to share a
// directory, and the second replaced the first one's copy of the original.

// backupRunDir is the backup directory of a run started at now: the first
// of BackupDir/<stamp>, <stamp>-2, … that does not exist under the root. It
// is created only when the first file is backed up.
func (h *Host) backupRunDir(now time.Time) string {
	stamp := now.UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		name := stamp
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		dir := path.Join(BackupDir, name)
		if _, err := os.Lstat(h.Path(dir)); errors.Is(err, fs.ErrNotExist) {
			return dir
		}
	}
}

// saveBackup copies data, the current content of target, to
// backupRoot/target. A file already backed up in this run keeps its first
// copy, which is the original (created is false then). A backup file that
// is already there from another run is never overwritten: that is an error.
func (h *Host) saveBackup(backupRoot, target string, data []byte, mode fs.FileMode) (backup string, created bool, err error) {
	backup = path.Join(backupRoot, target)
	if h.backedUp[backup] {
		return backup, false, nil
	}
	dest := h.Path(backup)
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("the backup %s already exists and is not overwritten; move it away and run again", backup)
	}
	if err != nil {
		return "", false, err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(dest)
		return "", false, err
	}
	if h.backedUp == nil {
		h.backedUp = map[string]bool{}
	}
	h.backedUp[backup] = true
	return backup, true, nil
}

// dropBackup removes a backup made for a write that then failed: the file
// it copies was left unchanged.
func (h *Host) dropBackup(backup string) {
	if backup == "" {
		return
	}
	os.Remove(h.Path(backup))
	delete(h.backedUp, backup)
}

package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Temporary testbed directories are named gpu-testbed-* and record their
// owner, so that a later Start can remove those whose test process died
// without stopping its testbed (a panic, a kill): its processes died with
// it (Pdeathsig), its directory did not.
const (
	tempDirPattern = "gpu-testbed-*"
	ownerFileName  = "owner.json"
)

// createTempDir makes a temporary testbed directory owned by this process,
// after sweeping abandoned ones.
func createTempDir() (string, error) {
	root := defaultTempRoot()
	sweepAbandonedTempDirs(root)
	dir, err := os.MkdirTemp(root, tempDirPattern)
	if err != nil {
		return "", fmt.Errorf("creating the testbed directory: %w", err)
	}
	startTime, err := processStartTime(os.Getpid())
	if err != nil {
		return dir, fmt.Errorf("recording the owner of %s: %w", dir, err)
	}
	owner, _ := json.Marshal(ProcessRecord{Name: filepath.Base(os.Args[0]), PID: os.Getpid(), StartTime: startTime})
	if err := os.WriteFile(filepath.Join(dir, ownerFileName), owner, 0o600); err != nil {
		return dir, fmt.Errorf("recording the owner of %s: %w", dir, err)
	}
	return dir, nil
}

// sweepAbandonedTempDirs removes temporary testbed directories whose owner
// has exited. Directories without an owner record (one being created right
// now) are left alone. Failures are ignored: this is hygiene.
func sweepAbandonedTempDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, tempDirPattern))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFileName))
		if err != nil {
			continue
		}
		var owner ProcessRecord
		if json.Unmarshal(data, &owner) != nil || owner.PID == 0 || owner.alive() {
			continue
		}
		os.RemoveAll(dir)
	}
}

// defaultTempRoot prefers a tmpfs for the throwaway directory, where etcd's
// fsyncs cost nothing, unless the user chose TMPDIR.
func defaultTempRoot() string {
	if os.Getenv("TMPDIR") == "" && isWritableDir("/dev/shm") {
		return "/dev/shm"
	}
	return os.TempDir()
}

func isWritableDir(dir string) bool {
	f, err := os.CreateTemp(dir, ".gpu-testbed-probe-")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

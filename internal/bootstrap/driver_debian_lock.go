package bootstrap

import (
	"fmt"
	"regexp"
	"strings"
)

// This file is the branch lock of NVIDIA's apt repository, as NVIDIA's
// Driver Installation Guide describes it
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html):
// a branch's nvidia-driver-pinning-<branch> package where the repository
// has one (it installs an apt preferences file that pins the driver's
// packages to the branch), else an apt preferences file of the step's own
// with "Pin: version <branch>.*" and "Pin-Priority: 1000" for every package
// of the stack. apt_preferences(5): a priority of 1000 or more installs the
// version "even if this constitutes a downgrade", so the pin also brings a
// stack upgraded behind the tool's back home, and apt-get upgrade never
// leaves the branch. Exactly one lock is wanted: a second one on another
// branch makes apt pick the higher version of the two.

// aptLockPath is the preferences file the step owns. apt reads files of
// /etc/apt/preferences.d/ without an extension or with ".pref"
// (apt_preferences(5)).
const aptLockPath = "/etc/apt/preferences.d/gpu-bootstrap-nvidia-driver.pref"

// aptLock is one lock on the driver branch.
type aptLock struct {
	pinning string // the pinning package; "" for the step's preferences file
	version string // the pinning package's version (to put it back)
	state   string // its dpkg state: "installed", or "config-files" (removed, not purged: its preferences file stays and still pins)
	branch  string
	content []byte // the preferences file's content
}

func (l aptLock) String() string {
	if l.pinning != "" {
		return l.pinning
	}
	if l.branch == "" {
		return aptLockPath + " (branch unreadable)"
	}
	return aptLockPath + " (branch " + l.branch + ")"
}

// readAptLocks are the locks on the host: pinning packages installed or
// left in config-files state, and the step's preferences file.
func readAptLocks(h *Host, status dpkgStatus) ([]aptLock, error) {
	var locks []aptLock
	for name, p := range status {
		if b := pinningBranch(name); b != "" && (p.Installed() || p.State == "config-files") {
			locks = append(locks, aptLock{pinning: name, version: p.Version, state: p.State, branch: b})
		}
	}
	data, exists, err := h.ReadFile(aptLockPath)
	if err != nil {
		return nil, fmt.Errorf("reading the driver branch lock: %w", err)
	}
	if exists {
		lock := aptLock{content: data}
		if m := aptLockPinPattern.FindSubmatch(data); m != nil {
			lock.branch = string(m[1])
		}
		locks = append(locks, lock)
	}
	sortLocks(locks)
	return locks, nil
}

var aptLockPinPattern = regexp.MustCompile(`(?m)^Pin:\s*version\s+([1-9][0-9]{2})\.\*\s*$`)

func sortLocks(locks []aptLock) {
	for i := 1; i < len(locks); i++ {
		for j := i; j > 0 && locks[j].String() < locks[j-1].String(); j-- {
			locks[j], locks[j-1] = locks[j-1], locks[j]
		}
	}
}

// aptLockFile is the step's preferences file for a branch: one entry for
// every stack package, as the guide's example pins each package to lock.
func aptLockFile(names aptDriverNames, branch string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by gpu-bootstrap's driver step: keeps the NVIDIA driver stack on\n")
	fmt.Fprintf(&b, "# branch %s, as NVIDIA's Driver Installation Guide locks a branch without a\n", branch)
	fmt.Fprintf(&b, "# pinning package (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html).\n")
	fmt.Fprintf(&b, "# Change driver.branch and run gpu-bootstrap apply to move to another branch.\n")
	fmt.Fprintf(&b, "Package: %s\n", strings.Join(names.stack, " ")+" cuda-drivers-"+branch+" nvidia-open-"+branch)
	fmt.Fprintf(&b, "Pin: version %s.*\n", branch)
	fmt.Fprintf(&b, "Pin-Priority: 1000\n")
	return []byte(b.String())
}

// wantedLock is the lock the configured branch needs.
func wantedLock(names aptDriverNames, cfg DriverConfig) aptLock {
	if names.pinningFrom > 0 && cfg.branchNumber() >= names.pinningFrom {
		return aptLock{pinning: pinningPackage(cfg.Branch), branch: cfg.Branch}
	}
	return aptLock{branch: cfg.Branch, content: aptLockFile(names, cfg.Branch)}
}

// locked reports whether locks is exactly the wanted lock.
func locked(locks []aptLock, want aptLock) bool {
	if len(locks) != 1 {
		return false
	}
	l := locks[0]
	if want.pinning != "" {
		return l.pinning == want.pinning && l.state == "installed"
	}
	return l.pinning == "" && string(l.content) == string(want.content)
}

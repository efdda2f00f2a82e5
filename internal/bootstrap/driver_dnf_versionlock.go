package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// This file refuses a plan that dnf's versionlock plugin would defeat: a
// lock on NVIDIA packages of another branch than the configured one.
//
// The step locks the branch with the module stream (driver_dnf.go), but
// NVIDIA's "Version locking" page also shows, for the same DNF 4
// distributions, `dnf versionlock \*nvidia\*575\*`, which "populate[s] the
// file /etc/dnf/plugins/versionlock.list"
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html).
// A node set up that way keeps its lock: the versionlock plugin hides
// every other version of a locked package from dnf (dnf-plugins-core,
// versionlock(8)), so a switch-to another branch would fail to resolve
// after the repository was set up. The plan says so first, and which
// lines to remove.

// dnfVersionlockListPath is the plugin's default locklist
// (/etc/dnf/plugins/versionlock.conf, "locklist").
const dnfVersionlockListPath = "/etc/dnf/plugins/versionlock.list"

// checkDNFVersionlock fails when versionlock.list locks an NVIDIA driver
// package to a branch other than cfg's.
func checkDNFVersionlock(h *Host, cfg DriverConfig) error {
	data, exists, err := h.ReadFile(dnfVersionlockListPath)
	if err != nil {
		return fmt.Errorf("reading %s: %w", dnfVersionlockListPath, err)
	}
	if !exists {
		return nil
	}
	var conflicting []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		entry := strings.TrimSpace(scanner.Text())
		if entry == "" || strings.HasPrefix(entry, "#") || strings.HasPrefix(entry, "!") {
			continue // a comment, or an exclude (versionlock exclude), which locks nothing in
		}
		name, version, ok := splitLockedNEVRA(entry)
		if !ok || !isNVIDIADriverPackage(name) {
			continue
		}
		if branch := branchOf(version); branchPattern.MatchString(branch) && branch != cfg.Branch {
			conflicting = append(conflicting, entry)
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", dnfVersionlockListPath, err)
	}
	if len(conflicting) == 0 {
		return nil
	}
	return fmt.Errorf("%s locks NVIDIA driver packages to another branch than driver.branch %q (%s): dnf cannot move them while the lock stands; remove the lock (`dnf versionlock delete` those entries) or set driver.branch to the locked branch",
		dnfVersionlockListPath, cfg.Branch, strings.Join(conflicting, ", "))
}

// splitLockedNEVRA splits a versionlock.list entry,
// "name-[epoch:]version-release.arch" with globs, into its name and
// [epoch:]version.
func splitLockedNEVRA(entry string) (name, version string, ok bool) {
	parts := strings.Split(entry, "-")
	if len(parts) < 3 {
		return "", "", false
	}
	return strings.Join(parts[:len(parts)-2], "-"), parts[len(parts)-2], true
}

// isNVIDIADriverPackage is whether a package belongs to the driver stack
// the step installs: NVIDIA's packages carry "nvidia" in their name, the
// proprietary flavor's metapackage is cuda-drivers.
func isNVIDIADriverPackage(name string) bool {
	return strings.Contains(name, "nvidia") || name == "cuda-drivers"
}

package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
)

// This file is dnf's versionlock plugin as the driver branch's lock: on
// RHEL 10 and its rebuilds the step owns the NVIDIA entries of the lock
// list and writes and moves them itself; on RHEL 8/9 and Amazon Linux 2023,
// where the module stream is the lock (driver_dnf.go), it refuses a plan
// that a user's versionlock on another branch would defeat.
//
// The facts, from NVIDIA's Driver Installation Guide:
//   - RHEL 10 / AlmaLinux 10 / Rocky Linux 10 / Oracle Linux 10 install a
//     branch with `dnf versionlock \*nvidia\*580\*` and then `dnf install
//     nvidia-open` (open) — the lock first, so the install resolves inside
//     the branch — where RHEL 8/9 enable a module stream
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/kernel-modules.html,
//     table "Open GPU kernel module installation"); NVIDIA's repository for
//     them, "rhel10", carries no module streams;
//   - their package manager is DNF 4 — the "DNF 4" section of "Version
//     locking" lists "Red Hat Enterprise Linux 10 / Rocky Linux 10" beside
//     8, 9 and Amazon Linux 2023 — whose lock needs "the
//     python3-dnf-plugin-versionlock package", and "dnf versionlock …
//     populate[s] the file /etc/dnf/plugins/versionlock.list"
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html;
//     Fedora and Azure Linux 4, on DNF 5, spell it `dnf versionlock add`);
//   - flavors switch with `dnf install --allowerasing nvidia-open` /
//     `cuda-drivers` ("Switching between Driver Module Flavors", RHEL 10,
//     https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/595/advanced-options.html).
//
// What the step writes. The guide's `dnf versionlock \*nvidia\*580\*`
// resolves the pattern to NEVRAs — the installed ones, or with none
// installed every available one (dnf-plugins-core versionlock.py; its
// output in the guide: "kmod-nvidia-open-dkms-3:575.51-1.fc41.*") — so it
// freezes the branch at the releases there are that day, and a later
// patch release of the branch is hidden too. chosen: the step writes one
// entry per package of the stack with the branch as a version glob,
// "nvidia-driver-3:580.*", the form `dnf versionlock add --raw` stores,
// so patch releases of the branch install and no other branch does — what
// the module stream locks on RHEL 8/9 ("the XXX and XXX-dkms streams lock
// driver updates to the specified driver branch",
// NVIDIA/yum-packaging-nvidia-driver guide-rhel8.md) and what DNF 5's own
// example spells as "keep all *nvidia* packages on version 3:570.*"
// (dnf5-versionlock(8)). The plugin reads version globs: realdnf_rhel10_test.go
// runs it. The names are every package the guide's command locked in its
// example plus every package of a branch in NVIDIA's repository generator
// (dnfVersionlockNames); a glob on the name ("*nvidia*") would hide every
// version of nvidia-container-toolkit, which is never on epoch 3.
//
// Moving the lock. A move writes the new branch's entries (and drops every
// other branch's, the user's too, so exactly one branch is locked), then
// moves the installed stack in one transaction, `dnf distro-sync
// --allowerasing` naming every installed package the lock holds: under
// the lock their only versions are the branch's, so distro-sync takes each
// to the branch's newest release, up or down, as switch-to does with a
// stream. Then `dnf install --allowerasing <flavor metapackage>`, the
// guide's install and flavor switch, completes the stack (a no-op when
// distro-sync moved it whole). When the move's transaction fails (a
// download, a conflict), the change's Undo puts the old lock list back,
// guarded by a check that the stack is still the one the old lock held:
// lock and stack never disagree, and the lock never names a branch that is
// not installed.

// dnfVersionlockListPath is the plugin's default locklist
// (/etc/dnf/plugins/versionlock.conf, "locklist").
const dnfVersionlockListPath = "/etc/dnf/plugins/versionlock.list"

// dnfVersionlockPlugin is the package of dnf 4's versionlock plugin
// (version-locking.html; dnf-plugins-core's subpackage).
const dnfVersionlockPlugin = "python3-dnf-plugin-versionlock"

// dnfVersionlockHeader starts the comment above the step's entries.
const dnfVersionlockHeader = "# gpu-bootstrap: NVIDIA driver branch "

// dnfVersionlockNames are the packages the lock holds to the branch: those
// the guide's `dnf4 versionlock \*nvidia\*575\*` locked in its example
// (version-locking.html: kmod-nvidia-open-dkms, nvidia-kmod-common,
// nvidia-driver-cuda-libs, nvidia-open, nvidia-xconfig, xorg-x11-nvidia,
// kmod-nvidia-latest-dkms, libnvidia-cfg), every package of a branch in
// NVIDIA's repository generator (NVIDIA/cuda-repo-management genmodules.py
// BRANCH_PKGS, cuda-drivers among them), and libnvidia-ml, the NVML package
// of the compute-only packaging (driver_dnf_stack.go).
var dnfVersionlockNames = []string{
	"cuda-drivers",
	"kmod-nvidia-latest-dkms",
	"kmod-nvidia-open-dkms",
	"libnvidia-cfg",
	"libnvidia-ml",
	"nvidia-driver",
	"nvidia-driver-NVML",
	"nvidia-driver-NvFBCOpenGL",
	"nvidia-driver-cuda",
	"nvidia-driver-cuda-libs",
	"nvidia-driver-devel",
	"nvidia-driver-libs",
	"nvidia-kmod-common",
	"nvidia-modprobe",
	"nvidia-open",
	"nvidia-persistenced",
	"nvidia-settings",
	"nvidia-xconfig",
	"xorg-x11-nvidia",
}

// dnfLockedByVersionlock is whether the distribution's branch lock is dnf's
// versionlock plugin rather than a module stream: RHEL 10 and its
// rebuilds, whose NVIDIA repository has no streams.
func dnfLockedByVersionlock(d Distro) bool {
	return d.Family == familyRHEL && d.CUDARepo == "rhel10"
}

// versionlockEntry is one of the step's lock entries, "nvidia-driver-3:580.*".
func versionlockEntry(name, branch string) string {
	return fmt.Sprintf("%s-%d:%s.*", name, nvidiaRPMEpoch, branch)
}

// nvidiaRPMEpoch is the epoch of NVIDIA's driver packages
// (NVIDIA/yum-packaging-nvidia-driver nvidia-driver.spec, "Epoch: 3"; the
// guide's versionlock example shows it on the newer distributions' packages
// too: "kmod-nvidia-open-dkms-3:575.51-1.fc41.*").
const nvidiaRPMEpoch = 3

// versionlockList is the lock list with the branch locked: every line of
// old kept except NVIDIA driver entries of any branch and the step's own
// comment, then the step's entries for branch.
func versionlockList(old []byte, branch string) []byte {
	var kept []string
	for _, line := range strings.Split(string(old), "\n") {
		entry := strings.TrimSpace(line)
		if strings.HasPrefix(entry, dnfVersionlockHeader) || lockedBranch(entry) != "" {
			continue
		}
		kept = append(kept, line)
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	var b strings.Builder
	for _, line := range kept {
		b.WriteString(line + "\n")
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s%s (driver.branch): dnf sees no other branch of these packages\n", dnfVersionlockHeader, branch)
	for _, name := range dnfVersionlockNames {
		b.WriteString(versionlockEntry(name, branch) + "\n")
	}
	return []byte(b.String())
}

// lockedBranch is the driver branch a lock list line locks an NVIDIA driver
// package to, "" for anything else (a comment, an exclude, another
// package, an NVIDIA package that is not the driver's: the toolkit).
func lockedBranch(entry string) string {
	if entry == "" || strings.HasPrefix(entry, "#") || strings.HasPrefix(entry, "!") {
		return "" // an exclude (versionlock exclude) locks nothing in
	}
	name, version, ok := splitLockedNEVRA(entry)
	if !ok || !isNVIDIADriverPackage(name) {
		return ""
	}
	if branch := branchOf(version); branchPattern.MatchString(branch) {
		return branch
	}
	return ""
}

// lockedBranches are the driver branches a lock list holds, sorted.
func lockedBranches(data []byte) []string {
	seen := map[string]bool{}
	var branches []string
	for _, line := range strings.Split(string(data), "\n") {
		if b := lockedBranch(strings.TrimSpace(line)); b != "" && !seen[b] {
			seen[b] = true
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	return branches
}

// dnfVersionlockPackaging plans the branch on RHEL 10: p carries the
// repository setup dnfPackaging planned; this adds the plugin, the lock
// and the install or move.
func dnfVersionlockPackaging(h *Host, cfg DriverConfig, flavor dnfFlavor, stack rpmDriverStack, p driverPackaging) (driverPackaging, error) {
	old, exists, err := h.ReadFile(dnfVersionlockListPath)
	if err != nil {
		return driverPackaging{}, fmt.Errorf("reading %s: %w", dnfVersionlockListPath, err)
	}
	if !exists {
		old = nil
	}
	want := versionlockList(old, cfg.Branch)
	_, plugin := stack.names[dnfVersionlockPlugin]
	lockWritten := exists && bytes.Equal(old, want)

	p.installed = stack.on(cfg.Branch, flavor, true)
	if p.installed {
		p.installedVersion = stack.driver[0].version
	}
	p.pinned = plugin && lockWritten
	p.packages = []string{flavor.meta}
	p.own, p.noStack = true, stack.empty()

	var pluginChange []Change
	if !plugin {
		pluginChange = []Change{{
			Summary: "install dnf's versionlock plugin, which holds the NVIDIA driver branch on this release (" + dnfVersionlockPlugin + ")",
			Ops:     commandOps(Command{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", dnfVersionlockPlugin}}),
		}}
	}
	var lockOps, undoLock []Op
	if !lockWritten {
		lockOps = []Op{FileOp{File: &FileChange{Path: dnfVersionlockListPath, Old: old, New: want, Mode: 0o644}}}
		if old == nil {
			undoLock = []Op{RemoveOp{Path: dnfVersionlockListPath}}
		} else {
			undoLock = []Op{FileOp{File: &FileChange{Path: dnfVersionlockListPath, Old: want, New: old, Mode: 0o644}}}
		}
	}

	switch {
	case !p.installed:
		ops := append([]Op{}, lockOps...)
		if held := stack.lockedNames(); len(held) > 0 {
			ops = append(ops, CommandOp{Command: Command{Root: h.Root, Name: "dnf", Args: append([]string{"-y", "distro-sync", "--allowerasing"}, held...)}})
		}
		ops = append(ops, CommandOp{Command: Command{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", "--allowerasing", flavor.meta}}})
		if stale := stack.staleNVML(cfg.branchNumber()); len(stale) > 0 {
			ops = append(ops, CommandOp{Command: Command{Root: h.Root, Name: "dnf", Args: append([]string{"-y", "remove"}, stale...)}})
		}
		ops = append(ops, CheckOp{
			What:  fmt.Sprintf("check that the NVIDIA driver stack is whole on branch %s (%s kernel modules)", cfg.Branch, cfg.flavor()),
			Check: stackOnCheck(cfg, flavor),
		})
		var undo []Op
		if len(undoLock) > 0 {
			undo = append([]Op{CheckOp{What: "check that the driver stack is as it was before the change", Check: stackUnchangedCheck(stack)}}, undoLock...)
		}
		summary := fmt.Sprintf("install NVIDIA driver branch %s (%s kernel modules) from %s: %s, locked to the branch with dnf versionlock", cfg.Branch, cfg.flavor(), p.source, flavor.meta)
		if !stack.empty() {
			summary += " (installed: " + stack.String() + ")"
		}
		p.planned = append(append(append([]Change{}, p.setup...), pluginChange...), Change{Summary: summary, Ops: ops, Undo: undo})
	case !p.pinned:
		p.planned = pluginChange
		if len(lockOps) > 0 {
			p.planned = append(p.planned, Change{
				Summary: fmt.Sprintf("lock the installed NVIDIA driver to branch %s with dnf versionlock (%s) so upgrades stay on it", cfg.Branch, dnfVersionlockListPath),
				Ops:     lockOps,
			})
		}
	}
	return p, nil
}

// lockedNames are the installed packages the lock holds, sorted: what a
// move names so the whole stack moves in its one transaction.
func (s rpmDriverStack) lockedNames() []string {
	var names []string
	for _, name := range dnfVersionlockNames {
		if _, ok := s.names[name]; ok {
			names = append(names, name)
		}
	}
	return names
}

// stackOnCheck fails unless the installed stack is whole on the branch in
// the flavor.
func stackOnCheck(cfg DriverConfig, flavor dnfFlavor) func(context.Context, *Host) error {
	return func(ctx context.Context, h *Host) error {
		stack, err := readRPMDriverStack(ctx, h)
		if err != nil {
			return err
		}
		if !stack.on(cfg.Branch, flavor, true) {
			return fmt.Errorf("after the install the NVIDIA driver stack is %s, not whole on branch %s (%s kernel modules)", stack, cfg.Branch, cfg.flavor())
		}
		return nil
	}
}

// stackUnchangedCheck fails when the installed stack is no longer before:
// the old lock would then contradict it.
func stackUnchangedCheck(before rpmDriverStack) func(context.Context, *Host) error {
	return func(ctx context.Context, h *Host) error {
		now, err := readRPMDriverStack(ctx, h)
		if err != nil {
			return err
		}
		if now.String() != before.String() {
			return fmt.Errorf("the driver stack moved (now %s), so the new lock, which agrees with it, stays", now)
		}
		return nil
	}
}

// checkDNFVersionlock fails when versionlock.list locks an NVIDIA driver
// package to a branch other than cfg's, where the stream is the lock (RHEL
// 8/9, Amazon Linux 2023). NVIDIA's "Version locking" page shows
// `dnf versionlock \*nvidia\*575\*` for the same DNF 4 distributions; a
// node set up that way keeps its lock: the plugin hides every other
// version of a locked package from dnf (versionlock(8)), so a switch-to
// another branch would fail to resolve after the repository was set up.
// The plan says so first, and which lines to remove.
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
		if branch := lockedBranch(entry); branch != "" && branch != cfg.Branch {
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
// [epoch:]version; the step's own "name-epoch:version" entries (no
// release) split too.
func splitLockedNEVRA(entry string) (name, version string, ok bool) {
	parts := strings.Split(entry, "-")
	if len(parts) < 2 {
		return "", "", false
	}
	if len(parts) >= 3 && !strings.Contains(parts[len(parts)-1], ":") {
		return strings.Join(parts[:len(parts)-2], "-"), parts[len(parts)-2], true
	}
	last := parts[len(parts)-1]
	if !strings.Contains(last, ":") {
		return "", "", false
	}
	return strings.Join(parts[:len(parts)-1], "-"), last, true
}

// isNVIDIADriverPackage is whether a package belongs to the driver stack
// the step installs: NVIDIA's packages carry "nvidia" in their name, the
// proprietary flavor's metapackage is cuda-drivers.
func isNVIDIADriverPackage(name string) bool {
	return strings.Contains(name, "nvidia") || name == "cuda-drivers"
}

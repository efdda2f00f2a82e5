package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// debianCUDAPackaging plans the driver from NVIDIA's CUDA apt repository,
// as NVIDIA's Driver Installation Guide describes it for Debian: the
// cuda-keyring package adds the repository, a lock keeps the branch
// (driver_debian_lock.go), and the flavor's packages install under it
// (driver_debian_names.go). The branch is judged by the installed stack
// (driver_debian_stack.go), so a stack that a ">=" dependency or an upgrade
// behind the tool's back moved to another branch is seen and brought back.
//
// Switching branches, the guide changes the pin and runs a dist-upgrade.
// The step instead names every installed stack package in one `apt-get
// install --allow-downgrades` under the new lock: with the lock at priority
// 1000 each named package's candidate is its version on the branch, so the
// whole stack moves in one transaction exactly as under dist-upgrade, while
// packages outside the stack change only where the stack's own dependencies
// need it — a dist-upgrade would also upgrade every unrelated package of an
// image. A failure after the lock changed puts the previous lock back
// (Change.Undo), so the lock never contradicts the stack.
func debianCUDAPackaging(h *Host, d Distro, cfg DriverConfig, kernel, goarch string) (driverPackaging, error) {
	arch, err := cudaRepoArch(goarch)
	if err != nil {
		return driverPackaging{}, err
	}
	// A flavor the branch lacks (proprietary from 620 on) is refused by
	// the driver's validation (driver_lifecycle.go), before this runs.
	names := debianNames(d.CUDARepo)
	status, err := readDpkgStatus(h)
	if err != nil {
		return driverPackaging{}, err
	}
	locks, err := readAptLocks(h, status)
	if err != nil {
		return driverPackaging{}, err
	}
	stack := readAptStack(status, names)
	repo := cudaRepoBase(d.CUDARepo, arch)
	p := driverPackaging{source: "NVIDIA's CUDA repository", own: true, noStack: stack.empty()}
	deb := "/tmp/" + cudaKeyringPackage
	download := commandOps(
		aptGetNoninteractive(h, "update"),
		aptGetNoninteractive(h, "install", "-y", "ca-certificates", "curl"),
		Command{Root: h.Root, Name: "curl", Args: []string{"-fsSL", "-o", deb, repo + cudaKeyringPackage}},
	)
	installKeyring := CommandOp{Command: Command{Root: h.Root, Name: "dpkg", Args: []string{"-i", deb}}}
	addKeyring := append(append([]Op{}, download...), installKeyring)
	stale, err := staleCUDASources(h, d.CUDARepo)
	if err != nil {
		return driverPackaging{}, err
	}
	switch {
	case !h.Exists(cudaKeyringPath):
		p.setup = append(p.setup, Change{
			Summary: fmt.Sprintf("add NVIDIA's CUDA apt repository for %s (%s)", d.CUDARepo, cudaKeyringPackage),
			Ops:     addKeyring,
		})
	case len(stale) > 0 && !h.Exists(cudaSourcesList(d.CUDARepo, arch)):
		// A node upgraded from the previous Debian release keeps that
		// release's cuda-keyring and repository: its driver packages are
		// built for the old release. NVIDIA's keyring package does not
		// replace another release's entry ("sudo apt purge cuda-keyring #
		// must manually remove old keyring, otherwise
		// /etc/apt/sources.list.d/cuda-debian11-x86_64.list will be kept",
		// NVIDIA/nvidia-docker issue 1791 on moving to debian12), so the
		// old one is purged before the new one installs, and a leftover
		// entry removed. The new one is downloaded first: a failed
		// download leaves the old repository and keyring in place.
		ops := append(append([]Op{}, download...), CommandOp{Command: aptGetNoninteractive(h, "purge", "-y", "cuda-keyring")})
		for _, list := range stale {
			ops = append(ops, RemoveOp{Path: list})
		}
		p.setup = append(p.setup, Change{
			Summary: fmt.Sprintf("replace NVIDIA's CUDA apt repository of another Debian release (%s) with the one for %s (%s): this is %s",
				strings.Join(stale, ", "), d.CUDARepo, cudaKeyringPackage, d.Release.Name()),
			Ops: append(ops, installKeyring),
		})
	case len(stale) > 0:
		// The release's own entry is there too (its cuda-keyring was
		// installed over the old one, whose entry dpkg keeps as an obsolete
		// conffile): apt would take the driver packages from either.
		var ops []Op
		for _, list := range stale {
			ops = append(ops, RemoveOp{Path: list})
		}
		p.setup = append(p.setup, Change{
			Summary: fmt.Sprintf("remove NVIDIA's CUDA apt repository of another Debian release (%s) next to the one for %s: this is %s",
				strings.Join(stale, ", "), d.CUDARepo, d.Release.Name()),
			Ops: ops,
		})
	}
	problems := stack.problems(cfg)
	want := wantedLock(names, cfg)
	p.installed = len(problems) == 0
	if p.installed {
		if nvml, ok := stack.get(names.nvml); ok {
			p.installedVersion = nvml.Version
		}
	}
	p.pinned = locked(locks, want)
	if p.installed && p.pinned {
		return p, nil
	}
	plan := aptBranchPlan{h: h, names: names, cfg: cfg, kernel: kernel, repo: repo, repoName: d.CUDARepo,
		stack: stack, locks: locks, want: want, problems: problems, move: !p.installed, relock: !p.pinned}
	p.planned = append(p.planned, p.setup...)
	p.planned = append(p.planned, plan.change())
	return p, nil
}

// cudaSourcesList is the sources.list.d entry NVIDIA's cuda-keyring
// package installs for a repository ("debian13") and architecture
// ("x86_64"): /etc/apt/sources.list.d/cuda-debian13-x86_64.list.
func cudaSourcesList(repo, arch string) string {
	return "/etc/apt/sources.list.d/cuda-" + repo + "-" + arch + ".list"
}

// cudaDebianRepoPattern is NVIDIA's CUDA repository for a Debian release
// in an apt source entry, capturing the release's directory ("debian12").
var cudaDebianRepoPattern = regexp.MustCompile(`developer\.download\.nvidia\.com/compute/cuda/repos/(debian[0-9]+)/`)

// staleCUDASources are the sources.list.d files whose enabled entries
// (aptSourceEntries: one-line or deb822, "Enabled: no" skipped) all name
// NVIDIA's CUDA repository for a Debian release, at least one for another
// release than repo, sorted: judged by content, whatever the file's name.
// Chosen: a file with other entries too is the user's, and is left alone.
func staleCUDASources(h *Host, repo string) ([]string, error) {
	var stale []string
	for _, file := range ubuntuSourceFiles(h) {
		if file == "/etc/apt/sources.list" {
			continue
		}
		data, exists, err := h.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the apt sources: %w", err)
		}
		if !exists {
			continue
		}
		entries := aptSourceEntries(file, data)
		other, all := false, len(entries) > 0
		for _, entry := range entries {
			m := cudaDebianRepoPattern.FindStringSubmatch(entry)
			all = all && m != nil
			other = other || m != nil && m[1] != repo
		}
		if all && other {
			stale = append(stale, file)
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// aptBranchPlan is the change that locks the branch and moves the stack.
type aptBranchPlan struct {
	h              *Host
	names          aptDriverNames
	cfg            DriverConfig
	kernel         string
	repo, repoName string
	stack          aptStack
	locks          []aptLock
	want           aptLock
	problems       []string
	move, relock   bool
}

func (pl aptBranchPlan) change() Change {
	h, cfg := pl.h, pl.cfg
	var ops, undoOps, redo, rehold []Op
	var why []string
	ops = append(ops, CheckOp{What: "check that no other apt or dpkg holds " + dpkgFrontendLock, Check: checkDpkgLock})
	havePin := false
	for _, l := range pl.locks {
		havePin = havePin || l.pinning != "" && l.pinning == pl.want.pinning && l.state == "installed"
	}
	if pl.move || pl.want.pinning != "" && pl.relock && !havePin {
		// The pinning package and the stack come from the repository:
		// refresh its index, and stop if it is stale or unverified.
		ops = append(ops, CommandOp{Command: aptGetNoninteractive(h, "update"), FatalWarnings: []string{strings.TrimSuffix(strings.TrimPrefix(pl.repo, "https://"), "/")}})
		ops = append(ops, CheckOp{What: fmt.Sprintf("check that NVIDIA's CUDA repository for %s offers branch %s (%s %s.*)", pl.repoName, cfg.Branch, pl.names.kernel[cfg.flavor()], cfg.Branch), Check: pl.checkOffered})
	}
	// A hold keeps apt from moving (or purging) a package; the lock
	// replaces it. Without a move only a held pinning package is in the way.
	var release []string
	for _, name := range pl.stack.held {
		if pl.move || pl.relock && pinningBranch(name) != "" {
			release = append(release, name)
		}
	}
	if len(release) > 0 {
		ops = append(ops, CommandOp{Command: Command{Root: h.Root, Name: "apt-mark", Args: append([]string{"unhold"}, release...)}})
		rehold = append(rehold, CommandOp{Command: Command{Root: h.Root, Name: "apt-mark", Args: append([]string{"hold"}, release...)}})
		why = append(why, "release the hold on "+strings.Join(release, ", ")+" (a hold blocks the move; the branch lock replaces it)")
	}
	if pl.relock {
		var purge, restorePkgs []string
		var keepFile bool
		for _, l := range pl.locks {
			switch {
			case l.pinning != "" && l.pinning == pl.want.pinning && l.state == "installed":
			case l.pinning != "":
				purge = append(purge, l.pinning)
				if l.state == "installed" {
					restorePkgs = append(restorePkgs, l.pinning+"="+l.version)
				}
			case pl.want.pinning == "":
				keepFile = true // rewritten below
			default:
				ops = append(ops, RemoveOp{Path: aptLockPath})
				redo = append(redo, FileOp{File: &FileChange{Path: aptLockPath, New: l.content, Mode: 0o644}})
			}
		}
		if len(purge) > 0 {
			// Purge, not remove: the pinning package's preferences file
			// is a conffile, which a removal leaves in place, still pinning.
			ops = append(ops, CommandOp{Command: aptGetNoninteractive(h, append([]string{"purge", "-y"}, purge...)...)})
			if len(restorePkgs) > 0 {
				redo = append(redo, CommandOp{Command: aptGetNoninteractive(h, append([]string{"install", "-y", "--allow-downgrades"}, restorePkgs...)...)})
			}
		}
		switch {
		case pl.want.pinning != "" && havePin:
		case pl.want.pinning != "":
			ops = append(ops, CommandOp{Command: aptGetNoninteractive(h, "install", "-y", pl.want.pinning)})
			undoOps = append(undoOps, CommandOp{Command: aptGetNoninteractive(h, "purge", "-y", pl.want.pinning)})
		default:
			var old []byte
			if keepFile {
				for _, l := range pl.locks {
					if l.pinning == "" {
						old = l.content
					}
				}
			}
			ops = append(ops, FileOp{File: &FileChange{Path: aptLockPath, Old: old, New: pl.want.content, Mode: 0o644}})
			if old == nil {
				undoOps = append(undoOps, RemoveOp{Path: aptLockPath})
			} else {
				undoOps = append(undoOps, FileOp{File: &FileChange{Path: aptLockPath, Old: pl.want.content, New: old, Mode: 0o644}})
			}
		}
	}
	if pl.move {
		ops = append(ops, CommandOp{Command: aptGetNoninteractive(h, append([]string{"install", "-y", "--allow-downgrades"}, pl.installArgs()...)...)})
		ops = append(ops, CheckOp{What: fmt.Sprintf("check that every installed driver stack package is on branch %s", cfg.Branch), Check: pl.checkStack})
	}
	// Undo: only while the stack is as it was (a failed download, a
	// refused transaction), the new lock goes and the old one comes back;
	// a stack that did move keeps the new lock, which agrees with it.
	undoOps = append(append(undoOps, redo...), rehold...)
	if len(undoOps) > 0 {
		undoOps = append([]Op{CheckOp{What: "check that the driver stack is as it was before the change", Check: pl.checkStackUnchanged}}, undoOps...)
	}
	return Change{Summary: pl.summary(why), Ops: ops, Undo: undoOps}
}

// installArgs are the packages the move names: the flavor's packages, every
// installed stack package that has a version on the branch (so the whole
// stack moves in the one transaction), and, with a trailing "-" (apt-get(8):
// "a hyphen appended to the package name … the package will be removed"),
// the other flavor's packages and branch-named metapackages of other
// branches.
func (pl aptBranchPlan) installArgs() []string {
	args := kernelHeadersDeb(pl.kernel)
	wanted := pl.names.installPackages(pl.cfg)
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			args = append(args, name)
		}
	}
	for _, name := range wanted {
		add(name)
	}
	var removals []string
	for _, p := range pl.stack.packages {
		switch {
		case seen[p.Name]:
		case pl.names.unwantedPackage(pl.cfg, p.Name):
			removals = append(removals, p.Name+"-")
		default:
			add(p.Name)
		}
	}
	sort.Strings(removals)
	return append(args, removals...)
}

func (pl aptBranchPlan) summary(why []string) string {
	cfg := pl.cfg
	lock := "locked to it by " + pl.want.String()
	if pl.want.pinning == "" {
		lock = "locked to it by " + aptLockPath
	}
	var s string
	switch {
	case pl.move && pl.stack.empty():
		s = fmt.Sprintf("install NVIDIA driver branch %s (%s kernel modules) from NVIDIA's CUDA repository: %s, %s",
			cfg.Branch, cfg.flavor(), strings.Join(pl.names.installPackages(cfg), ", "), lock)
	case pl.move:
		s = fmt.Sprintf("move the NVIDIA driver to branch %s (%s kernel modules), %s: %s",
			cfg.Branch, cfg.flavor(), lock, strings.Join(pl.problems, "; "))
	default:
		s = fmt.Sprintf("lock the installed NVIDIA driver stack to branch %s with %s", cfg.Branch, pl.want)
	}
	if pl.relock && len(pl.locks) > 0 {
		var old []string
		for _, l := range pl.locks {
			old = append(old, l.String())
		}
		s += " (in place of " + strings.Join(old, ", ") + ")"
	}
	if len(why) > 0 {
		s += "; " + strings.Join(why, "; ")
	}
	return s
}

// checkOffered fails when the repository's fresh index has no version of
// the flavor's kernel module package on the branch (or, for a branch with
// one, no pinning package): a branch the repository does not offer stops
// the change before the lock is touched.
func (pl aptBranchPlan) checkOffered(ctx context.Context, h *Host) error {
	kmod := pl.names.kernel[pl.cfg.flavor()]
	versions, err := aptMadison(ctx, h, kmod)
	if err != nil {
		return err
	}
	offered := map[string]bool{}
	var branches []string
	for _, v := range versions {
		if b := branchOf(v); !offered[b] {
			offered[b] = true
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	if !offered[pl.cfg.Branch] {
		return fieldError("driver.branch", "NVIDIA's CUDA repository for %s offers no %s at branch %s (branches it offers: %s): set driver.branch to one of them",
			pl.repoName, kmod, pl.cfg.Branch, orNone(branches))
	}
	if pl.want.pinning != "" {
		pins, err := aptMadison(ctx, h, pl.want.pinning)
		if err != nil {
			return err
		}
		if len(pins) == 0 {
			return fieldError("driver.branch", "NVIDIA's CUDA repository for %s has no %s to lock branch %s with", pl.repoName, pl.want.pinning, pl.cfg.Branch)
		}
	}
	return nil
}

// aptMadison are the versions apt-cache madison lists for a package
// ("name | version | source" lines, apt-cache(8)).
func aptMadison(ctx context.Context, h *Host, pkg string) ([]string, error) {
	out, err := h.Run(ctx, "apt-cache", "madison", pkg)
	if err != nil {
		return nil, err
	}
	var versions []string
	scanner := bufio.NewScanner(bytes.NewReader(out.Stdout))
	for scanner.Scan() {
		fields := strings.Split(scanner.Text(), "|")
		if len(fields) >= 2 && strings.TrimSpace(fields[0]) == pkg {
			versions = append(versions, strings.TrimSpace(fields[1]))
		}
	}
	return versions, nil
}

// checkStack fails when the install left a stack package off the branch (a
// package the branch does not have, which apt kept at its version).
func (pl aptBranchPlan) checkStack(_ context.Context, h *Host) error {
	status, err := readDpkgStatus(h)
	if err != nil {
		return err
	}
	stack := readAptStack(status, pl.names)
	if problems := stack.problems(pl.cfg); len(problems) > 0 {
		var off []string
		for _, p := range stack.offBranch(pl.cfg.Branch) {
			off = append(off, p.Name)
		}
		msg := "after the install: " + strings.Join(problems, "; ")
		if len(off) > 0 {
			msg += fmt.Sprintf(" (branch %s has no version of %s: remove them with apt-get purge, or choose another driver.branch)", pl.cfg.Branch, strings.Join(off, ", "))
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// checkStackUnchanged fails when the installed stack is no longer the one
// the change was planned on.
func (pl aptBranchPlan) checkStackUnchanged(_ context.Context, h *Host) error {
	status, err := readDpkgStatus(h)
	if err != nil {
		return err
	}
	now := readAptStack(status, pl.names)
	if now.fingerprint() != pl.stack.fingerprint() {
		return fmt.Errorf("the driver stack changed before the failure (now: %s), so the new lock stays: it agrees with the stack, and the next apply finishes the move", now.describe())
	}
	return nil
}

func orNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

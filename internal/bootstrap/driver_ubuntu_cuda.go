package bootstrap

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// ubuntuCUDAPackaging plans the driver from NVIDIA's CUDA repository on
// Ubuntu (driver_ubuntu_source.go says when). The lock is the Debian
// repository's (driver_debian_lock.go: the pinning package, or the step's
// preferences file before 570; exactly one left), planned by the same
// aptBranchPlan; the move is this file's, because the package names
// depend on the branch: every installed package of the other naming, of
// another branch, of the other flavor, and every Ubuntu "-server" package
// is removed in the one `apt-get install --allow-downgrades` that installs
// the branch, and each installed package the user added (libnvidia-gl,
// nvidia-driver-open, ...) is named in the branch's naming, so it moves
// with the stack.
func ubuntuCUDAPackaging(h *Host, d Distro, cfg DriverConfig, kernel, goarch string, status dpkgStatus) (driverPackaging, error) {
	arch, err := cudaRepoArch(goarch)
	if err != nil {
		return driverPackaging{}, err
	}
	repoName := ubuntuCUDARepo(d)
	names := ubuntuCUDANames("Ubuntu "+d.Release.VersionID+" (NVIDIA's CUDA repository)", cfg)
	locks, err := readAptLocks(h, status)
	if err != nil {
		return driverPackaging{}, err
	}
	state := readUbuntuCUDAState(status, names, cfg)
	repo := cudaRepoBase(repoName, arch)
	// The repository is set up: a source naming it is what chose this
	// packaging (driver_ubuntu_source.go).
	p := driverPackaging{source: "NVIDIA's CUDA repository", own: true, noStack: state.stack.empty() && len(state.server) == 0}
	want := wantedLock(ubuntuCUDALockNames(cfg), cfg)
	p.installed = len(state.problems) == 0
	if p.installed {
		if nvml, ok := state.stack.get(names.nvml); ok {
			p.installedVersion = nvml.Version
		}
	}
	relock := !locked(locks, want)
	// A version's pinning package (nvidia-driver-pinning-595.71.05) is a
	// lock like the branch's (pinningBranch): a second one makes relock
	// true, and the lock part purges it, its Undo reinstalling the exact
	// version.
	p.pinned = !relock
	if p.installed && p.pinned {
		return p, nil
	}
	pl := aptBranchPlan{h: h, names: names, cfg: cfg, kernel: kernel, repo: repo, repoName: repoName,
		stack: state.stack, locks: locks, want: want, problems: state.problems, relock: relock}
	// The lock part is the Debian repository's plan without its move.
	change := pl.change()
	ops, undo := change.Ops, change.Undo
	if !p.installed {
		ops, undo = state.moveOps(pl, ops, undo)
	}
	change.Ops, change.Undo = ops, undo
	change.Summary = state.summary(pl)
	p.planned = append(p.planned, change)
	return p, nil
}

// ubuntuCUDAState is the installed driver as NVIDIA's Ubuntu repository
// names it, and what keeps it from being cfg's branch and flavor.
type ubuntuCUDAState struct {
	cfg        DriverConfig
	names      aptDriverNames
	stack      aptStack
	server     []string // Ubuntu's "-server" driver packages, installed
	serverHeld []string // of them, the held ones
	problems   []string
}

func readUbuntuCUDAState(status dpkgStatus, names aptDriverNames, cfg DriverConfig) ubuntuCUDAState {
	s := ubuntuCUDAState{cfg: cfg, names: names, stack: readAptStack(status, names)}
	for name, p := range status {
		if ubuntuStackPattern.MatchString(name) && p.Installed() {
			s.server = append(s.server, name)
			if p.Held() {
				s.serverHeld = append(s.serverHeld, name)
			}
		}
	}
	sort.Strings(s.server)
	sort.Strings(s.serverHeld)
	s.problems = s.stack.problems(cfg)
	if s.stack.empty() && len(s.server) == 0 {
		s.problems = []string{"no driver stack installed"}
	} else if s.stack.empty() {
		s.problems = nil
	}
	offBranch := map[string]bool{}
	for _, p := range s.stack.offBranch(cfg.Branch) {
		offBranch[p.Name] = true
	}
	for _, p := range s.stack.packages {
		if why := ubuntuCUDAUnwanted(cfg, p.Name); why != "" && !offBranch[p.Name] && p.Name != names.kernel[otherFlavor(cfg)] {
			s.problems = append(s.problems, fmt.Sprintf("%s is installed (%s)", p.Name, why))
		}
	}
	if len(s.server) > 0 {
		s.problems = append(s.problems, fmt.Sprintf("Ubuntu's archive driver packages are installed (%s)", strings.Join(s.server, ", ")))
	}
	return s
}

// installArgs are the move's packages: the branch's install packages, each
// installed stack package in the branch's naming (so the stack moves
// together), and, with apt-get's trailing "-", the packages that must go.
func (s ubuntuCUDAState) installArgs(kernel string) (args, removed []string) {
	args = kernelHeadersDeb(kernel)
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			args = append(args, name)
		}
	}
	for _, name := range ubuntuCUDAInstall(s.cfg) {
		add(name)
	}
	for _, p := range s.stack.packages {
		if ubuntuCUDAUnwanted(s.cfg, p.Name) == "" {
			add(p.Name)
			continue
		}
		removed = append(removed, p.Name)
		add(ubuntuCUDACounterpart(s.cfg, p.Name))
	}
	removed = append(removed, s.server...)
	sort.Strings(removed)
	for _, name := range removed {
		if !seen[name] {
			args = append(args, name+"-")
		}
	}
	return args, removed
}

// ubuntuCUDACounterpart is the package of cfg's branch, naming and flavor
// that stands for an installed one that must go: libnvidia-gl for
// libnvidia-gl-580 on a move to 595, nvidia-driver-580-open for
// nvidia-driver-open on a move to 580, nvidia-open for cuda-drivers on a
// move to the open modules. "" for the other flavor's kernel module
// package, which the branch's own replaces.
func ubuntuCUDACounterpart(cfg DriverConfig, name string) string {
	p, ok := parseUbuntuCUDAPackage(name)
	if !ok {
		return ""
	}
	if p.meta {
		meta := "cuda-drivers"
		if cfg.open() {
			meta = "nvidia-open"
		}
		if p.branch != "" && cfg.branchNumber() < firstUnbranchedUbuntuBranch {
			meta += "-" + cfg.Branch
		}
		return meta
	}
	if p.base == "nvidia-dkms" {
		return ""
	}
	return ubuntuCUDAName(p.base, cfg.Branch, p.flavored() && cfg.open())
}

// moveOps appends the move to the lock's ops: refresh the index (unless
// the lock part did) and check the branch is offered, release the holds
// that would block it, the one install, and a check of the result.
func (s ubuntuCUDAState) moveOps(pl aptBranchPlan, ops, undo []Op) ([]Op, []Op) {
	h := pl.h
	updated := false
	for _, op := range ops {
		if c, ok := op.(CommandOp); ok && len(c.Command.Args) >= 3 && c.Command.Args[2] == "update" {
			updated = true
		}
	}
	if !updated {
		ops = append(ops,
			CommandOp{Command: aptGetNoninteractive(h, "update"), FatalWarnings: []string{strings.TrimSuffix(strings.TrimPrefix(pl.repo, "https://"), "/")}},
			CheckOp{What: fmt.Sprintf("check that NVIDIA's CUDA repository for %s offers branch %s (%s %s.*)", pl.repoName, pl.cfg.Branch, pl.names.kernel[pl.cfg.flavor()], pl.cfg.Branch), Check: pl.checkOffered})
	}
	var release []string
	for _, name := range append(append([]string{}, s.stack.held...), s.serverHeld...) {
		if pinningBranch(name) == "" {
			release = append(release, name)
		}
	}
	sort.Strings(release)
	if len(release) > 0 {
		ops = append(ops, CommandOp{Command: Command{Root: h.Root, Name: "apt-mark", Args: append([]string{"unhold"}, release...)}})
		rehold := CommandOp{Command: Command{Root: h.Root, Name: "apt-mark", Args: append([]string{"hold"}, release...)}}
		if len(undo) == 0 {
			undo = []Op{CheckOp{What: "check that the driver stack is as it was before the change", Check: pl.checkStackUnchanged}}
		}
		undo = append(undo, rehold)
	}
	args, _ := s.installArgs(pl.kernel)
	ops = append(ops,
		CommandOp{Command: aptGetNoninteractive(h, append([]string{"install", "-y", "--allow-downgrades"}, args...)...)},
		CheckOp{What: fmt.Sprintf("check that the driver stack is branch %s in NVIDIA's naming for it, nothing else", pl.cfg.Branch), Check: s.checkAfter})
	return ops, undo
}

// checkAfter fails when the install left the stack short of the branch.
func (s ubuntuCUDAState) checkAfter(_ context.Context, h *Host) error {
	status, err := readDpkgStatus(h)
	if err != nil {
		return err
	}
	now := readUbuntuCUDAState(status, s.names, s.cfg)
	if len(now.problems) > 0 {
		return fmt.Errorf("after the install: %s", strings.Join(now.problems, "; "))
	}
	return nil
}

// summary is the change's line in the plan.
func (s ubuntuCUDAState) summary(pl aptBranchPlan) string {
	cfg := pl.cfg
	lock := "locked to it by " + pl.want.String()
	if pl.want.pinning == "" {
		lock = "locked to it by " + aptLockPath
	}
	var out string
	_, removed := s.installArgs(pl.kernel)
	switch {
	case len(pl.problems) == 0:
		out = fmt.Sprintf("lock the installed NVIDIA driver stack to branch %s with %s", cfg.Branch, pl.want)
	case s.stack.empty() && len(s.server) == 0:
		out = fmt.Sprintf("install NVIDIA driver branch %s (%s kernel modules) from NVIDIA's CUDA repository for %s: %s, %s",
			cfg.Branch, cfg.flavor(), pl.repoName, strings.Join(ubuntuCUDAInstall(cfg), ", "), lock)
	default:
		out = fmt.Sprintf("move the NVIDIA driver to branch %s (%s kernel modules) from NVIDIA's CUDA repository for %s, %s: %s",
			cfg.Branch, cfg.flavor(), pl.repoName, lock, strings.Join(pl.problems, "; "))
		if len(removed) > 0 {
			out += "; removes " + strings.Join(removed, ", ")
		}
	}
	if pl.relock && len(pl.locks) > 0 {
		var old []string
		for _, l := range pl.locks {
			old = append(old, l.String())
		}
		out += " (in place of " + strings.Join(old, ", ") + ")"
	}
	return out
}

package bootstrap

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ubuntuDriverPackagePrefixes name the NVIDIA driver packages whose holds
// belong to the driver step: a hold on another branch or flavor is released
// before the configured one replaces it.
var ubuntuDriverPackagePrefixes = []string{"nvidia-headless-", "nvidia-utils-", "nvidia-driver-", "nvidia-open", "cuda-drivers", "nvidia-dkms-", "libnvidia-compute-"}

// ubuntuArchiveOpenOnlyBranch is the first branch whose "-server"
// packages in Ubuntu's archive have no proprietary kernel modules:
// packages.ubuntu.com, source nvidia-graphics-drivers-615-server (jammy,
// noble, resolute), lists nvidia-dkms-615-server as "NVIDIA DKMS package
// (transitional package)" next to nvidia-dkms-615-server-open, where 595's
// and 610's proprietary DKMS packages are real ones.
const ubuntuArchiveOpenOnlyBranch = 615

// ubuntuNames are the names of Ubuntu's -server driver packages of a branch
// (driver_debian_names.go cites them): every package carries the branch.
type ubuntuNames struct {
	main, utils, kernel, nvml string
}

func ubuntuNamesFor(cfg DriverConfig) ubuntuNames {
	b, open := cfg.Branch, ""
	if cfg.open() {
		open = "-open"
	}
	return ubuntuNames{
		main:   "nvidia-headless-" + b + "-server" + open,
		utils:  "nvidia-utils-" + b + "-server",
		kernel: "nvidia-dkms-" + b + "-server" + open,
		nvml:   "libnvidia-compute-" + b + "-server",
	}
}

// ubuntuStackPattern matches a package of Ubuntu's -server driver stack and
// captures its branch: nvidia-headless-580-server-open,
// libnvidia-compute-580-server, nvidia-dkms-580-server, …
var ubuntuStackPattern = regexp.MustCompile(`^(?:nvidia|libnvidia)-[a-z0-9-]*?-([1-9][0-9]{2})-server(?:-open)?$`)

// ubuntuPackaging installs the branch from Ubuntu's archive. It uses the
// "-server" packages (Canonical's Enterprise Ready Drivers, the branches
// NVIDIA supports on data-center GPUs; `ubuntu-drivers --gpgpu` picks them)
// and of those the headless ones (no X or desktop libraries), as NVIDIA's
// own Ansible role (NVIDIA/ansible-role-nvidia-driver) does:
// nvidia-headless-<branch>-server[-open] brings the DKMS kernel module
// (nvidia-dkms-<branch>-server[-open]), the compute libraries with NVML
// (libnvidia-compute-<branch>-server) and nvidia-persistenced,
// nvidia-utils-<branch>-server brings nvidia-smi.
//
// The branch is judged by the installed stack — the kernel module and NVML
// packages at a version of the branch, no package of another branch or of
// the other flavor, and none of NVIDIA's CUDA repository — and a move
// removes the other branch's packages in the same transaction, so no mixed
// stack is left. A stack of NVIDIA's CUDA repository without its source
// (driver_ubuntu_source.go) is a plan error on driver.branch: the user adds
// NVIDIA's repository for the release back, or purges its packages.
// Pinning packages of it left without its stack are purged once the
// install has succeeded (a removed one leaves its preferences file, a
// conffile, still pinning). The packages are held with
// apt-mark: when Ubuntu stops maintaining a branch it turns its packages
// into transitional packages that pull in a newer branch, and a held
// package is never upgraded into one. The hold also keeps patch releases
// out; `apt-mark unhold` them to take one.
func ubuntuPackaging(h *Host, cfg DriverConfig, kernel, repoName string, status dpkgStatus) (driverPackaging, error) {
	if !cfg.open() && cfg.branchNumber() >= ubuntuArchiveOpenOnlyBranch {
		return driverPackaging{}, fieldError("driver.kernel_modules", `Ubuntu's archive ships branch %s with open kernel modules only (from %d on its proprietary nvidia-dkms-<branch>-server is a transitional package to the open one): set driver.kernel_modules to "open", or choose an older branch for pre-Turing GPUs`, cfg.Branch, ubuntuArchiveOpenOnlyBranch)
	}
	names := ubuntuNamesFor(cfg)
	packages := []string{names.main, names.utils}
	installed := status[names.main]
	if installed.Installed() && (installed.Transitional() || branchOf(installed.Version) != cfg.Branch) {
		return driverPackaging{}, fmt.Errorf("%s %s is installed, but it is a transitional package that pulls in another branch: Ubuntu no longer maintains branch %s (check `apt-cache search nvidia-headless-` for the current -server branches) and set driver.branch to one of them", names.main, installed.Version, cfg.Branch)
	}
	stack, problems := ubuntuStack(status, cfg, names)
	var removals []string
	for _, p := range stack {
		if m := ubuntuStackPattern.FindStringSubmatch(p.Name); m[1] != cfg.Branch || ubuntuOtherFlavor(cfg, p.Name) {
			removals = append(removals, p.Name+"-")
		}
	}
	cudaStack, pins := ubuntuCUDAInstalled(status)
	if len(cudaStack) > 0 {
		// NVIDIA's stack without NVIDIA's source for this release (a
		// do-release-upgrade leaves or disables the old release's
		// repository; the source was removed): replacing it would also
		// take what depends on it (cuda-runtime-*, cuda) with it. Which
		// vendor the node follows is the user's to say.
		all := append(append([]string{}, cudaStack...), pins...)
		return driverPackaging{}, fieldError("driver.branch", "NVIDIA's driver packages from its CUDA repository are installed (%s), but no apt source of the node names NVIDIA's CUDA repository for %s: add NVIDIA's repository for %s (cuda-keyring), or remove NVIDIA's driver packages (apt-get purge %s) to use Ubuntu's archive",
			strings.Join(cudaStack, ", "), repoName, repoName, strings.Join(all, " "))
	}
	if len(pins) > 0 {
		problems = append(problems, "NVIDIA's pinning packages are left ("+strings.Join(pins, ", ")+")")
	}
	install := append(append([]string{"install", "-y"}, kernelHeadersDeb(kernel)...), packages...)
	cmds := []Command{aptGetNoninteractive(h, append(install, removals...)...)}
	if len(pins) > 0 {
		// After the install: a failed one leaves the node as it was.
		cmds = append(cmds, aptGetNoninteractive(h, append([]string{"purge", "-y"}, pins...)...))
	}
	p := driverPackaging{
		source:   "Ubuntu's archive",
		packages: packages,
		prepare:  []Command{aptGetNoninteractive(h, "update")},
		offered: []Op{CheckOp{What: fmt.Sprintf("check that Ubuntu's archive offers %s", names.main),
			Check: func(ctx context.Context, h *Host) error { return ubuntuCheckOffered(ctx, h, cfg, repoName) }}},
		install: cmds,
		pin:     []Command{{Root: h.Root, Name: "apt-mark", Args: append([]string{"hold"}, packages...)}},
	}
	if (len(stack) > 0 || len(pins) > 0) && len(problems) > 0 {
		p.stackNote = strings.Join(problems, "; ")
	}
	if len(problems) == 0 {
		p.installed, p.installedVersion = true, installed.Version
	}
	p.pinned = status[names.main].Held() && status[names.utils].Held()
	p.releasePackages = status.heldExcept(ubuntuDriverPackagePrefixes, packages)
	sort.Strings(p.releasePackages)
	if len(p.releasePackages) > 0 {
		p.release = []Command{{Root: h.Root, Name: "apt-mark", Args: append([]string{"unhold"}, p.releasePackages...)}}
	}
	return p, nil
}

// ubuntuCheckOffered fails, after apt-get update, when Ubuntu's archive
// has no version of the branch's headless package in cfg's flavor (apt's
// own "Unable to locate package" would say less), naming the "-server"
// branches it does offer in that flavor (apt-cache(8) pkgnames: the
// package names that begin with a prefix).
func ubuntuCheckOffered(ctx context.Context, h *Host, cfg DriverConfig, repoName string) error {
	main := ubuntuNamesFor(cfg).main
	versions, err := aptMadison(ctx, h, main)
	if err != nil || len(versions) > 0 {
		return err
	}
	out, err := h.Run(ctx, "apt-cache", "pkgnames", "nvidia-headless-")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var branches []string
	for _, name := range strings.Fields(string(out.Stdout)) {
		m := ubuntuHeadlessPattern.FindStringSubmatch(name)
		if m == nil || (m[2] == "-open") != cfg.open() || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		branches = append(branches, m[1])
	}
	sort.Strings(branches)
	return fieldError("driver.branch", "Ubuntu's archive offers no %s (its \"-server\" branches with %s kernel modules: %s): set driver.branch to one of them, or add NVIDIA's CUDA repository for %s (cuda-keyring) to install from it",
		main, cfg.flavor(), orNone(branches), repoName)
}

// ubuntuHeadlessPattern is the name of a branch's headless "-server"
// package, capturing the branch and "-open".
var ubuntuHeadlessPattern = regexp.MustCompile(`^nvidia-headless-([1-9][0-9]{2})-server(-open)?$`)

// ubuntuCUDAInstalled are the installed driver packages of NVIDIA's CUDA
// repository (driver_ubuntu_names.go) and its pinning packages, installed
// or left in config-files state, sorted.
func ubuntuCUDAInstalled(status dpkgStatus) (stack, pins []string) {
	for name, p := range status {
		if _, ok := parseUbuntuCUDAPackage(name); ok && p.Installed() {
			stack = append(stack, name)
		}
		if pinningBranch(name) != "" && (p.Installed() || p.State == "config-files") {
			pins = append(pins, name)
		}
	}
	sort.Strings(stack)
	sort.Strings(pins)
	return stack, pins
}

// ubuntuOtherFlavor reports whether a stack package is the other flavor's
// kernel module or metapackage.
func ubuntuOtherFlavor(cfg DriverConfig, name string) bool {
	open := strings.HasSuffix(name, "-server-open")
	flavored := strings.HasPrefix(name, "nvidia-dkms-") || strings.HasPrefix(name, "nvidia-headless-") && !strings.HasPrefix(name, "nvidia-headless-no-dkms-")
	return flavored && open != cfg.open()
}

// ubuntuStack is the installed -server stack and what keeps it from being
// cfg's branch and flavor, in the words plan shows: "driver stack on branch
// 550 (libnvidia-compute-550-server 550.163.01-0ubuntu1, …), asked 580".
func ubuntuStack(status dpkgStatus, cfg DriverConfig, names ubuntuNames) ([]dpkgPackage, []string) {
	var stack []dpkgPackage
	byBranch := map[string][]string{}
	for name, p := range status {
		m := ubuntuStackPattern.FindStringSubmatch(name)
		if m == nil || !p.Installed() {
			continue
		}
		stack = append(stack, p)
		b := branchOf(p.Version)
		if name == names.kernel || name == names.nvml || strings.HasPrefix(name, "nvidia-dkms-") || strings.HasPrefix(name, "libnvidia-compute-") {
			byBranch[b] = append(byBranch[b], name+" "+p.Version)
		} else if _, ok := byBranch[b]; !ok {
			byBranch[b] = nil
		}
		if m[1] != b {
			byBranch[b] = append(byBranch[b], name+" "+p.Version)
		}
	}
	sort.Slice(stack, func(i, j int) bool { return stack[i].Name < stack[j].Name })
	var problems []string
	var branches []string
	for b := range byBranch {
		branches = append(branches, b)
	}
	sort.Strings(branches)
	if len(branches) > 1 || len(branches) == 1 && branches[0] != cfg.Branch {
		var parts []string
		for _, b := range branches {
			sort.Strings(byBranch[b])
			parts = append(parts, fmt.Sprintf("branch %s (%s)", b, strings.Join(byBranch[b], ", ")))
		}
		what := "driver stack on " + parts[0]
		if len(parts) > 1 {
			what = "mixed driver stack: " + strings.Join(parts, ", ")
		}
		problems = append(problems, what+", asked "+cfg.Branch)
	}
	for _, name := range []string{names.main, names.kernel, names.nvml} {
		if p, ok := status[name]; !ok || !p.Installed() {
			problems = append(problems, name+" is not installed")
		}
	}
	for _, p := range stack {
		if ubuntuOtherFlavor(cfg, p.Name) {
			problems = append(problems, p.Name+" (the other kernel module flavor) is installed")
		}
	}
	return stack, problems
}

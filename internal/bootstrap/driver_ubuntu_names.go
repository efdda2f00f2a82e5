package bootstrap

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file is the names of NVIDIA's driver packages in NVIDIA's CUDA apt
// repository for Ubuntu (ubuntu2204, ubuntu2404, ubuntu2604), before and
// after the 590 rename. Sources:
//
//   [warn]    NVIDIA's Driver Installation Guide, its warning as NVIDIA's own
//             deployment documents quote it (code corpus, find_string
//             "Ubuntu 590 and later packages"): "Starting with branch 590,
//             the Ubuntu packages have been renamed by removing the branch
//             designation from the package name. Switching branches,
//             installing specific driver versions, and upgrade or downgrade
//             requirements will be supported through version locking
//             (pinning) packages. Refer to the Ubuntu 590 and later packages
//             section of the recent updates". The guide's table of contents
//             (r590, 615 and 620 PDFs,
//             https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf):
//             "Recent Updates › Version locking packages for Ubuntu / Debian ›
//             Ubuntu 590 and later packages".
//   [ubuntu]  the guide's Ubuntu chapter
//             (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/latest/ubuntu.html,
//             as copied on 2026-05-21 into public notes; code corpus,
//             find_string "libnvidia-compute nvidia-dkms-open"): the
//             network repository is .../cuda/repos/$distro/{x86_64,sbsa}/,
//             added by cuda-keyring_1.1-1_all.deb or by
//             /etc/apt/sources.list.d/cuda-$distro-$arch.list with
//             "signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg";
//             "apt install nvidia-driver-pinning-<branch>" or
//             "nvidia-driver-pinning-<version>", "Install the pinning package
//             before the driver"; "Note: Starting with branch 590, branch
//             designation was removed from Ubuntu package names. Use version
//             locking packages to manage branch and version switching.";
//             "apt install nvidia-open" (open kernel modules), "apt install
//             cuda-drivers" (proprietary); "Compute-only System": "apt -V
//             install libnvidia-compute nvidia-dkms-open" (open),
//             "libnvidia-compute nvidia-dkms" (proprietary).
//   [apt]     `apt search nvidia-driver-pinning` on a ubuntu2404 node with
//             the repository (public notes, same find_string):
//             "nvidia-driver-pinning-610 610-2ubuntu1 all  APT driver
//             pinning file for driver branch 610" and
//             "nvidia-driver-pinning-595.71.05 595.71.05-1ubuntu1 all  APT
//             driver pinning file for driver version 595.71.05"; driver
//             packages at "610.43.02-1ubuntu1" (nvidia-driver-open).
//   [pre590]  a public GPU node script installing from the ubuntu repository
//             (code corpus, same find_string): "apt install
//             nvidia-driver-pinning-580" then "libnvidia-compute-580
//             nvidia-dkms-580" (pre-590, branch-named), and
//             "libnvidia-compute nvidia-dkms-open" for the newest branch.
//   [version] the guide's "Version locking" page
//             (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html):
//             "we suggest installing the pinning package prior to installing
//             the driver"; without one, an apt preferences entry pinning every
//             package to the branch (driver_debian_lock.go).
//   [archive] Ubuntu's own packaging of a branch (packages.ubuntu.com,
//             source nvidia-graphics-drivers-<branch>[-server]): the binary
//             packages libnvidia-cfg1-, libnvidia-common-, libnvidia-compute-,
//             libnvidia-decode-, libnvidia-encode-, libnvidia-extra-,
//             libnvidia-fbc1-, libnvidia-gl-, nvidia-compute-utils-,
//             nvidia-dkms-<b>[-open], nvidia-driver-<b>[-open],
//             nvidia-headless-<b>[-open], nvidia-headless-no-dkms-<b>[-open],
//             nvidia-kernel-common-, nvidia-kernel-source-<b>[-open],
//             nvidia-utils-, xserver-xorg-video-nvidia-<b>.
//
// Derived: the rename "removing the branch designation" [warn] makes the
// pre-590 name of a package its [archive] name without "-server"
// (libnvidia-compute-580, nvidia-dkms-580 [pre590]; nvidia-driver-580-open
// next to nvidia-driver-pinning-580 in DGX setup notes, code corpus
// find_string "nvidia-driver-pinning"), and the post-590 name the same
// without "-<branch>": nvidia-dkms-580-open → nvidia-dkms-open,
// libnvidia-compute-580 → libnvidia-compute ([ubuntu] and [apt] confirm
// nvidia-dkms-open, nvidia-driver-open and libnvidia-compute).
//
// Chosen (no source seen):
//   - nvidia-smi is nvidia-utils (nvidia-utils-<b> before 590), as in
//     Ubuntu's packaging; the step installs it next to the guide's
//     compute-only pair, since `gpu-bootstrap check` and users need
//     nvidia-smi.
//   - The pinning packages exist from branch 570, as in NVIDIA's Debian
//     repository (firstPinningPackageBranch): the guide introduced them
//     "for Debian and Ubuntu" together.
//   - The CUDA repository carries no transitional packages across the
//     rename: a branch-named package has only versions of its branch, an
//     unbranched one only versions from 590 on.

// firstUnbranchedUbuntuBranch is the first branch whose Ubuntu packages in
// NVIDIA's CUDA repository have no branch in their names [warn].
const firstUnbranchedUbuntuBranch = 590

// ubuntuCUDABases are the driver packages' names without the branch
// ([archive]), and ubuntuCUDAFlavored those of them with an "-open"
// variant for the open kernel modules.
var (
	ubuntuCUDABases = []string{
		"libnvidia-cfg1", "libnvidia-common", "libnvidia-compute", "libnvidia-decode", "libnvidia-encode",
		"libnvidia-extra", "libnvidia-fbc1", "libnvidia-gl", "nvidia-compute-utils", "nvidia-dkms",
		"nvidia-driver", "nvidia-headless", "nvidia-headless-no-dkms", "nvidia-kernel-common",
		"nvidia-kernel-source", "nvidia-utils", "xserver-xorg-video-nvidia",
	}
	ubuntuCUDAFlavored = []string{"nvidia-dkms", "nvidia-driver", "nvidia-headless", "nvidia-headless-no-dkms", "nvidia-kernel-source"}
)

// ubuntuCUDABranchNamed are the branches before the rename whose
// branch-named packages the step recognizes on a node (and removes on a
// move): chosen, every branch NVIDIA published from 450 to 580.
var ubuntuCUDABranchNamed = []string{
	"450", "455", "460", "465", "470", "495", "510", "515", "520", "525", "530", "535",
	"545", "550", "555", "560", "565", "570", "575", "580",
}

// ubuntuCUDAPackage is one driver package name of NVIDIA's Ubuntu
// repository, parsed.
type ubuntuCUDAPackage struct {
	base   string // "nvidia-dkms", or a metapackage "cuda-drivers" / "nvidia-open"
	branch string // "580" for a branch-named package, "" for an unbranched one
	open   bool   // the "-open" variant (or the nvidia-open metapackage)
	meta   bool   // cuda-drivers, nvidia-open and their -<branch> forms
}

var ubuntuCUDAPattern = regexp.MustCompile(`^(` + strings.Join(quoteAll(ubuntuCUDABases), "|") + `|cuda-drivers|nvidia-open)(?:-([1-9][0-9]{2}))?(-open)?$`)

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexp.QuoteMeta(n)
	}
	return out
}

// parseUbuntuCUDAPackage reads a package name of NVIDIA's Ubuntu driver
// stack; false for any other (Ubuntu's "-server" packages included).
func parseUbuntuCUDAPackage(name string) (ubuntuCUDAPackage, bool) {
	m := ubuntuCUDAPattern.FindStringSubmatch(name)
	if m == nil {
		return ubuntuCUDAPackage{}, false
	}
	p := ubuntuCUDAPackage{base: m[1], branch: m[2], open: m[3] != ""}
	switch p.base {
	case "cuda-drivers", "nvidia-open":
		if p.open {
			return ubuntuCUDAPackage{}, false
		}
		p.meta, p.open = true, p.base == "nvidia-open"
		return p, true
	}
	if p.open && !slices.Contains(ubuntuCUDAFlavored, p.base) {
		return ubuntuCUDAPackage{}, false
	}
	return p, true
}

// flavored reports whether the package belongs to one kernel module flavor.
func (p ubuntuCUDAPackage) flavored() bool {
	return p.meta || slices.Contains(ubuntuCUDAFlavored, p.base)
}

// ubuntuCUDAName is a package's name for a branch: branch-named before the
// rename, unbranched from it on.
func ubuntuCUDAName(base, branch string, open bool) string {
	name := base
	if n, _ := strconv.Atoi(branch); n != 0 && n < firstUnbranchedUbuntuBranch {
		name += "-" + branch
	}
	if open {
		name += "-open"
	}
	return name
}

// ubuntuCUDANames are the names of cfg's branch in NVIDIA's Ubuntu
// repository, in the shape the apt lock and stack code reads
// (driver_debian_lock.go, driver_debian_stack.go): the kernel module,
// NVML (libnvidia-compute) and nvidia-smi (nvidia-utils) packages the
// branch is judged by, and as the stack every name of both namings, so a
// stack of the other naming is seen and moved.
func ubuntuCUDANames(distro string, cfg DriverConfig) aptDriverNames {
	b := cfg.Branch
	n := aptDriverNames{
		distro:      distro,
		pinningFrom: firstPinningPackageBranch,
		metaFrom:    0,
		meta:        map[string]string{KernelModulesOpen: "nvidia-open", KernelModulesProprietary: "cuda-drivers"},
		kernel: map[string]string{
			KernelModulesOpen:        ubuntuCUDAName("nvidia-dkms", b, true),
			KernelModulesProprietary: ubuntuCUDAName("nvidia-dkms", b, false),
		},
		driver: ubuntuCUDAName("nvidia-utils", b, false),
		nvml:   ubuntuCUDAName("libnvidia-compute", b, false),
	}
	n.stack = append(n.stack, "cuda-drivers", "nvidia-open")
	for _, branch := range append([]string{""}, ubuntuCUDABranchNamed...) {
		for _, base := range ubuntuCUDABases {
			n.stack = append(n.stack, ubuntuCUDAJoin(base, branch, false))
			if slices.Contains(ubuntuCUDAFlavored, base) {
				n.stack = append(n.stack, ubuntuCUDAJoin(base, branch, true))
			}
		}
	}
	return n
}

func ubuntuCUDAJoin(base, branch string, open bool) string {
	if branch != "" {
		base += "-" + branch
	}
	if open {
		base += "-open"
	}
	return base
}

// ubuntuCUDALockNames are the names the step's own preferences file lists
// for a branch without a pinning package: the branch's packages only.
func ubuntuCUDALockNames(cfg DriverConfig) aptDriverNames {
	n := aptDriverNames{pinningFrom: firstPinningPackageBranch, stack: []string{"cuda-drivers", "nvidia-open"}}
	for _, base := range ubuntuCUDABases {
		n.stack = append(n.stack, ubuntuCUDAName(base, cfg.Branch, false))
		if slices.Contains(ubuntuCUDAFlavored, base) {
			n.stack = append(n.stack, ubuntuCUDAName(base, cfg.Branch, true))
		}
	}
	return n
}

// ubuntuCUDAInstall are the packages an install of the branch names: the
// guide's compute-only set [ubuntu] (libnvidia-compute and the flavor's
// DKMS package) and nvidia-utils for nvidia-smi, in the branch's naming.
func ubuntuCUDAInstall(cfg DriverConfig) []string {
	return []string{
		ubuntuCUDAName("libnvidia-compute", cfg.Branch, false),
		ubuntuCUDAName("nvidia-dkms", cfg.Branch, cfg.open()),
		ubuntuCUDAName("nvidia-utils", cfg.Branch, false),
	}
}

// ubuntuCUDAUnwanted says why an installed stack package must go for cfg's
// branch and flavor ("" when it may stay and move with the stack): a name
// of the other naming (a branch-named package has no version from 590 on,
// an unbranched one none before), a branch-named package of another
// branch, or the other flavor's package.
func ubuntuCUDAUnwanted(cfg DriverConfig, name string) string {
	p, ok := parseUbuntuCUDAPackage(name)
	if !ok {
		return ""
	}
	unbranchedTarget := cfg.branchNumber() >= firstUnbranchedUbuntuBranch
	switch {
	case p.branch != "" && unbranchedTarget:
		return "named for branch " + p.branch + ": from 590 on the packages carry no branch"
	case p.branch == "" && !p.meta && !unbranchedTarget:
		return "an unbranched name, which has no version before 590"
	case p.branch != "" && p.branch != cfg.Branch:
		return "a package of branch " + p.branch
	case p.flavored() && p.open != cfg.open():
		return "the " + otherFlavor(cfg) + " kernel modules' package"
	}
	return ""
}

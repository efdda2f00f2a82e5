package bootstrap

import (
	"strings"
)

// This file is the names of NVIDIA's driver packages in the apt
// repositories the driver step installs from, one table per distribution.
// Every name comes from NVIDIA's own documents:
//
//   - the Driver Installation Guide, Debian page
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/debian.html):
//     the cuda-keyring package adds the repository; `apt install
//     nvidia-driver-pinning-<branch>` selects a branch; `apt install
//     nvidia-open` installs the open kernel modules, `apt install
//     cuda-drivers` the proprietary ones;
//   - its "Version locking" page
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html):
//     for distributions without the pinning package of a branch, an apt
//     preferences entry with "Pin: version <branch>.*" and
//     "Pin-Priority: 1000" for every package to lock;
//   - NVIDIA's debian12 CUDA repository
//     (https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/),
//     whose driver packages keep Debian's own names (Debian's
//     nvidia-graphics-drivers source package): nvidia-driver,
//     libnvidia-ml1 (NVML), libcuda1, nvidia-smi, firmware-nvidia-gsp,
//     nvidia-kernel-dkms (proprietary modules) and nvidia-kernel-open-dkms
//     (open modules), and the branch-named cuda-drivers-<branch> whose
//     dependencies are unbounded ">=" versions (NVIDIA's forum,
//     https://forums.developer.nvidia.com/t/353805: cuda-drivers-580
//     580.105.08-1 "Depends: nvidia-driver (>= 580.65.06), …
//     nvidia-kernel-dkms (>= 580.65.06)" pulls in 590). There is no
//     nvidia-driver-<branch>-open on Debian: that is Ubuntu's name.
//   - the guide's "Linux System Requirements"
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html,
//     also its 610 edition): "Debian 12 | debian12 | amd64" and "Debian 13 |
//     debian13 | amd64", so NVIDIA's repository for Debian 13 is the
//     debian13 directory, laid out as debian12's. The names are the same
//     in both (debian13Names); public setups of the debian13 repository
//     install nvidia-driver-pinning-580 with cuda-drivers-580 and
//     nvidia-driver-pinning-610 with cuda-drivers-610 ("On Debian, the CUDA
//     repo uses cuda-drivers as the meta-package (not nvidia-driver-610 as
//     on Ubuntu)"; code corpus, find_string "repos/debian13/x86_64" and
//     "nvidia-driver-pinning-580").
//   - the guide's "Recent Updates" (Driver_Installation_Guide.pdf, editions
//     r590, 615 and 620): "Version locking packages for Ubuntu / Debian"
//     has one subsection, "Ubuntu 590 and later packages": from 590 on
//     NVIDIA's Ubuntu packages dropped the branch from their names. Debian's
//     names did not change at 590 — they never carried the branch (Debian's
//     own nvidia-graphics-drivers names above), only the cuda-drivers-<b>
//     and nvidia-open-<b> metapackages do, before and after 590 — and the
//     pinning package has been the branch lock on Debian since 570. So on
//     Debian a move across 590 (580 to 595 and back) is a move like any
//     other: the same names, another pinning package.
//   - the guide's 620 edition, "Recent Updates › Proprietary Kernel Modules
//     Removed" (firstOpenOnlyBranch): from 620 on there are no proprietary
//     kernel modules, so no nvidia-kernel-dkms and no cuda-drivers (which
//     depends on it, [forum] below) at 620; driver.kernel_modules
//     "proprietary" fails at plan time (supports).
//   - version pinning packages next to the branch ones,
//     nvidia-driver-pinning-<version> (nvidia-driver-pinning-595.71.05 on
//     debian13, nvidia-driver-pinning-595.45.04 next to
//     nvidia-driver-pinning-595 in the ubuntu2404 repository, each pinning
//     "version 595.71.05-*"; code corpus, find_string
//     "nvidia-driver-pinning-595"). Such a package is a lock too: left next
//     to the branch's pinning package it holds the stack at that one
//     release (no patch releases) and keeps apt from leaving it on a move,
//     so the step replaces it with the branch's pinning package like any
//     other lock (pinningBranch).
//   - Ubuntu's archive (https://packages.ubuntu.com, source
//     nvidia-graphics-drivers-<branch>-server): every package carries the
//     branch in its name, with "-server" for Canonical's Enterprise Ready
//     Drivers and "-open" for the open kernel modules:
//     nvidia-headless-<b>-server[-open], nvidia-utils-<b>-server,
//     libnvidia-compute-<b>-server (libcuda and NVML),
//     nvidia-dkms-<b>-server[-open] (the kernel modules).

// aptDriverNames are one apt distribution's NVIDIA driver package names.
type aptDriverNames struct {
	// distro is the distribution as errors name it.
	distro string
	// pinningFrom is the first branch with an
	// nvidia-driver-pinning-<branch> package.
	pinningFrom int
	// metaFrom is the first branch whose flavor metapackages (meta) exist:
	// older branches install the kernel module package and cuda-drivers.
	metaFrom int
	// meta is the metapackage the guide installs per flavor.
	meta map[string]string
	// kernel is the kernel module package per flavor.
	kernel map[string]string
	// driver and nvml are the driver and NVML library packages: with
	// kernel, the packages the branch is judged by.
	driver, nvml string
	// driverCUDA is the driver's CUDA libraries (libcuda1, nvidia-smi).
	driverCUDA string
	// stack is every package whose version is the driver's: the packages
	// a branch lock lists and a branch move moves together.
	stack []string
}

// debianNames are the names of NVIDIA's CUDA repository for a Debian
// release ("debian12", "debian13": Distro.CUDARepo).
func debianNames(repo string) aptDriverNames {
	if repo == "debian13" {
		return debian13Names
	}
	return debian12Names
}

// debian13Names is NVIDIA's debian13 CUDA repository: debian12's names
// (see the sources above).
var debian13Names = func() aptDriverNames {
	n := debian12Names
	n.distro = "Debian 13 (NVIDIA's CUDA repository)"
	return n
}()

// debian12Names is NVIDIA's debian12 CUDA repository.
var debian12Names = aptDriverNames{
	distro:      "Debian 12 (NVIDIA's CUDA repository)",
	pinningFrom: firstPinningPackageBranch,
	// The guide installs nvidia-open from branch 560 on, the branch that
	// made the open modules the default; before it, the open flavor is
	// nvidia-kernel-open-dkms next to cuda-drivers.
	metaFrom:   560,
	meta:       map[string]string{KernelModulesOpen: "nvidia-open", KernelModulesProprietary: "cuda-drivers"},
	kernel:     map[string]string{KernelModulesOpen: "nvidia-kernel-open-dkms", KernelModulesProprietary: "nvidia-kernel-dkms"},
	driver:     "nvidia-driver",
	nvml:       "libnvidia-ml1",
	driverCUDA: "nvidia-driver-cuda",
	// Debian's nvidia-graphics-drivers binary packages that NVIDIA's
	// repository builds at the driver's version, and NVIDIA's
	// metapackages. A name the repository lacks is harmless in a pin.
	stack: []string{
		"cuda-drivers", "nvidia-open",
		"nvidia-driver", "nvidia-driver-cuda", "nvidia-driver-libs", "nvidia-driver-bin",
		"nvidia-kernel-dkms", "nvidia-kernel-open-dkms", "nvidia-kernel-support", "nvidia-kernel-common",
		"nvidia-open-kernel-support", "firmware-nvidia-gsp", "nvidia-modprobe", "nvidia-alternative",
		"libnvidia-ml1", "libcuda1", "nvidia-smi", "nvidia-persistenced", "nvidia-cuda-mps",
		"libnvidia-cfg1", "libnvidia-ptxjitcompiler1", "libnvidia-nvvm4", "libnvidia-gpucomp",
		"libnvidia-allocator1", "libnvidia-fbc1", "libnvidia-encode1", "libnvcuvid1",
		"nvidia-opencl-icd", "nvidia-egl-icd", "nvidia-vulkan-icd", "nvidia-vdpau-driver",
		"libnvidia-eglcore", "libnvidia-glcore", "libnvidia-glvkspirv", "libnvidia-rtcore", "libnvoptix1",
		"libegl-nvidia0", "libgles-nvidia1", "libgles-nvidia2", "libglx-nvidia0", "libgl1-nvidia-glvnd-glx",
		"xserver-xorg-video-nvidia", "nvidia-settings", "nvidia-xconfig", "nvidia-suspend-common",
	},
}

// stackPackage reports whether name is a package of the stack: one of
// names.stack or a branch-named metapackage (cuda-drivers-<branch>,
// nvidia-open-<branch>).
func (n aptDriverNames) stackPackage(name string) bool {
	for _, s := range n.stack {
		if s == name {
			return true
		}
	}
	return n.branchMeta(name) != ""
}

// branchMeta is the branch of a branch-named metapackage
// (cuda-drivers-<branch>, and nvidia-open-<branch> as NVIDIA's 560
// packaging introduced it: "apt-get install nvidia-open-560" installs a
// branch), "" for any other name.
func (n aptDriverNames) branchMeta(name string) string {
	for _, meta := range n.meta {
		if rest, ok := strings.CutPrefix(name, meta+"-"); ok && branchPattern.MatchString(rest) {
			return rest
		}
	}
	return ""
}

// pinningPackage is the name of a branch's pinning package.
func pinningPackage(branch string) string { return "nvidia-driver-pinning-" + branch }

// pinningBranch is the branch of a pinning package's name, of a branch's
// (nvidia-driver-pinning-580) or of a version's
// (nvidia-driver-pinning-595.71.05); "" for another package.
func pinningBranch(name string) string {
	rest, ok := strings.CutPrefix(name, "nvidia-driver-pinning-")
	if !ok {
		return ""
	}
	if branchPattern.MatchString(rest) {
		return rest
	}
	if m := fullVersionPattern.FindStringSubmatch(rest); m != nil {
		return m[1]
	}
	return ""
}

// installPackages are the packages an install of the branch names: the
// flavor's metapackage where the branch has it, the kernel module package of
// the flavor, and the driver and NVML packages the branch is judged by.
// Before the open metapackage existed, the open flavor is its kernel module
// package with the driver and its CUDA libraries, nvidia-driver-cuda, which
// cuda-drivers would otherwise bring (cuda-drivers there depends on the
// proprietary module package, as the forum thread above shows).
func (n aptDriverNames) installPackages(cfg DriverConfig) []string {
	flavor := cfg.flavor()
	if cfg.branchNumber() >= n.metaFrom || !cfg.open() {
		return []string{n.meta[flavor], n.kernel[flavor], n.driver, n.nvml}
	}
	return []string{n.kernel[flavor], n.driver, n.driverCUDA, n.nvml}
}

// unwantedPackage reports whether an installed package must go for cfg's
// branch and flavor: the other flavor's kernel module package and
// metapackages (cuda-drivers and cuda-drivers-<branch> depend on the
// proprietary modules, nvidia-open and nvidia-open-<branch> on the open
// ones), branch-named metapackages of other branches, and nvidia-open on a
// branch older than it (it has no version there to move to).
func (n aptDriverNames) unwantedPackage(cfg DriverConfig, name string) bool {
	other := otherFlavor(cfg)
	if name == n.kernel[other] || name == n.meta[other] || strings.HasPrefix(name, n.meta[other]+"-") && n.branchMeta(name) != "" {
		return true
	}
	if b := n.branchMeta(name); b != "" && b != cfg.Branch {
		return true
	}
	open := n.meta[KernelModulesOpen]
	return cfg.branchNumber() < n.metaFrom && (name == open || n.branchMeta(name) != "" && strings.HasPrefix(name, open+"-"))
}

// otherFlavor is the flavor that is not cfg's.
func otherFlavor(cfg DriverConfig) string {
	if cfg.open() {
		return KernelModulesProprietary
	}
	return KernelModulesOpen
}

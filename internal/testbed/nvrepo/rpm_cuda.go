package nvrepo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// This file is the model of NVIDIA's CUDA rpm repository for RHEL 8/9/10 and
// Amazon Linux 2023 (https://developer.download.nvidia.com/compute/cuda/repos/<distro>/x86_64/):
// which driver packages each release has, with which dependencies, and
// which module streams of the nvidia-driver module carry them.
//
// Sources, per shape:
//   - Epoch 3 on every driver package, the names nvidia-driver,
//     nvidia-driver-cuda-libs, nvidia-driver-NVML and
//     nvidia-driver-cuda-libs' library, and nvidia-driver's "Requires:
//     nvidia-kmod-common = %{epoch}:%{version}": NVIDIA/yum-packaging-nvidia-driver
//     nvidia-driver.spec.
//   - kmod-nvidia-open-dkms: "Provides: nvidia-kmod = %{epoch}:%{version}",
//     "Requires: nvidia-kmod-common = …", "Requires: dkms", "Conflicts:
//     kmod-nvidia-latest-dkms": NVIDIA/yum-packaging-dkms-nvidia
//     dkms-open-nvidia.spec; kmod-nvidia-latest-dkms is the proprietary
//     flavor of the same (its README: streams XXX-dkms and latest-dkms).
//   - libnvidia-ml (the NVML library in a package of its own) from 560 on,
//     when the driver was split for compute-only installs
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/compute-only-and-desktop-installation.html,
//     "Starting in 560"); nvidia-driver-NVML before that.
//   - nvidia-open (open flavor) and cuda-drivers (proprietary) as the
//     metapackages a branch is installed through after 570
//     (driver-installation-guide/kernel-modules.html: "dnf module enable
//     nvidia-driver:580-open", "dnf install nvidia-open"); their
//     dependencies are unbounded "at least" versions, the shape the issue
//     documents for cuda-drivers-580 pulling in 590, which only the module
//     stream keeps inside the branch.
//   - rhel10 has no module streams: NVIDIA's guide locks branches there
//     with dnf versionlock instead (driver-installation-guide/620/kernel-modules.html,
//     "Red Hat Enterprise Linux 10": `dnf versionlock \*nvidia\*580\*`).
//   - Streams <branch>-dkms and <branch>-open (branches above 510), and
//     latest, latest-dkms and open-dkms following the highest branch; each
//     stream's artifacts are every package of its branch, and its default
//     profile installs the branch; latest-dkms is the module's default
//     stream (modulemd-defaults): NVIDIA/cuda-repo-management genmodules.py.
//
// Where the model departs from genmodules.py, on purpose: a stream lists
// every release of its branch's kernel module package (genmodules.py lists
// the newest only), and a stream leaves out the other flavor's kernel
// module and metapackage, so that every stream's default profile resolves;
// the precompiled-kmod streams ("<branch>", "latest") are not modeled —
// the driver step uses DKMS streams only.

// DefaultCUDARPMVersions are the driver releases of the model: branches
// 550, 570 and 580, with two patch releases of 580.
var DefaultCUDARPMVersions = []string{"550.163.01", "570.195.03", "580.95.05", "580.105.08"}

// Releases of the branches NVIDIA publishes in late 2026, for the tests
// that need them (lifecycle: docs.nvidia.com/datacenter/tesla/drivers/615
// and /620 "Supported Drivers and CUDA Toolkit Versions": R535 long-term,
// end of life June 2026; R580 long-term, June 2028; R595 production, March
// 2027; R620 long-term, September 2029).
const (
	// EOLRelease535 is branch 535's last release the model knows:
	// 535.288.01. chosen: the newest 535 release in a public package
	// index we could read (Gentoo's x11-drivers/nvidia-drivers); NVIDIA's
	// own release list (releases.json) was not readable here.
	EOLRelease535 = "535.288.01"
	// LTSRelease580 is a 580 release NVIDIA named as its current
	// production branch release ("Current graphics driver releases",
	// forums.developer.nvidia.com: 580.126.09).
	LTSRelease580 = "580.126.09"
	// ProductionRelease595 is 595.45.04, the first 595 release NVIDIA
	// named in the same post (as its beta). chosen: no later 595 number
	// was readable; the branch, not the patch number, is what the tests
	// judge.
	ProductionRelease595 = "595.45.04"
	// LTSRelease620 is 620.39.02. chosen: no 620 release number was
	// readable in NVIDIA's sources here; the number has the shape of
	// NVIDIA's releases and only its branch matters to the tests.
	LTSRelease620 = "620.39.02"
)

// RHEL10CUDARPMVersions are the releases of the model's rhel10
// repository: 580 (long-term), 595 (production), 620 (long-term, open
// only). chosen: NVIDIA's rhel10 repository starts after RHEL 10's release
// (May 2025), so it carries no branch before 575; the model keeps the
// three supported branches.
var RHEL10CUDARPMVersions = []string{LTSRelease580, ProductionRelease595, LTSRelease620}

// cudaRPMEpoch is the epoch of NVIDIA's driver packages.
const cudaRPMEpoch = 3

// firstOpenBranch is the first branch with open kernel modules (515;
// genmodules.py adds -open streams above 510).
const rpmFirstOpenBranch = 515

// rpmFirstOpenOnlyBranch is the first branch without proprietary kernel
// modules: the 620 edition of the Driver Installation Guide lists
// "Proprietary Kernel Modules Removed"
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/,
// Recent Updates), and its kernel-modules.html has no proprietary table.
// Its releases have no kmod-nvidia-latest-dkms and no cuda-drivers, and
// its branch no -dkms stream. chosen: latest-dkms then follows the highest
// branch that still has the proprietary flavor.
const rpmFirstOpenOnlyBranch = 620

// firstSplitNVMLBranch is the first branch whose NVML library is the
// libnvidia-ml package rather than nvidia-driver-NVML.
const rpmFirstSplitNVMLBranch = 560

// rpmBranchOf is 580 of "580.95.05".
func rpmBranchOf(version string) int {
	major, _, _ := strings.Cut(version, ".")
	n, _ := strconv.Atoi(major)
	return n
}

// rpmNVMLPackage is the name of the package carrying libnvidia-ml.so.1 in
// a release.
func rpmNVMLPackage(version string) string {
	if rpmBranchOf(version) >= rpmFirstSplitNVMLBranch {
		return "libnvidia-ml"
	}
	return "nvidia-driver-NVML"
}

// cudaDriverPackages are the packages of one driver release.
func cudaDriverPackages(version, dist string) []RPMPackage {
	release := "1." + dist
	evr := func(name string) string { return fmt.Sprintf("%s = %d:%s", name, cudaRPMEpoch, version) }
	atLeast := func(name string) string { return fmt.Sprintf("%s >= %d:%s", name, cudaRPMEpoch, version) }
	pkg := func(name, arch string) RPMPackage {
		return RPMPackage{Name: name, Epoch: cudaRPMEpoch, Version: version, Release: release, Arch: arch}
	}
	nvml := rpmNVMLPackage(version)

	driver := pkg("nvidia-driver", "x86_64")
	driver.Requires = []string{evr("nvidia-kmod-common")}
	driver.Files = map[string]string{"/usr/share/nvidia/nvidia-driver-" + version: version}

	cudaLibs := pkg("nvidia-driver-cuda-libs", "x86_64")
	cudaLibs.Files = map[string]string{"/usr/lib64/libcuda.so." + version: version}

	nvmlPkg := pkg(nvml, "x86_64")
	// rpmbuild's find-provides derives this from the real library's
	// soname; the model's library is a marker file, so it is declared.
	nvmlPkg.Provides = []string{"libnvidia-ml.so.1()(64bit)"}
	nvmlPkg.Files = map[string]string{"/usr/lib64/libnvidia-ml.so." + version: version}

	common := pkg("nvidia-kmod-common", "noarch")
	common.Files = map[string]string{"/usr/lib/modprobe.d/nvidia-" + version + ".conf": "options nvidia"}

	pkgs := []RPMPackage{driver, cudaLibs, nvmlPkg, common}
	var kmods []struct{ name, flavor string }
	proprietary := rpmBranchOf(version) < rpmFirstOpenOnlyBranch
	if proprietary {
		kmods = append(kmods, struct{ name, flavor string }{"kmod-nvidia-latest-dkms", "latest"})
	}
	if rpmBranchOf(version) >= rpmFirstOpenBranch {
		kmods = append(kmods, struct{ name, flavor string }{"kmod-nvidia-open-dkms", "open"})
	}
	for _, k := range kmods {
		kmod := pkg(k.name, "x86_64")
		kmod.Provides = []string{evr("nvidia-kmod")}
		kmod.Requires = []string{evr("nvidia-kmod-common"), "dkms"}
		for _, other := range kmods {
			if other.name != k.name {
				kmod.Conflicts = append(kmod.Conflicts, other.name)
			}
		}
		kmod.Files = map[string]string{"/usr/src/nvidia-" + k.flavor + "-" + version + "/dkms.conf": "PACKAGE_VERSION=" + version}
		pkgs = append(pkgs, kmod)
	}

	if proprietary {
		cudaDrivers := pkg("cuda-drivers", "x86_64")
		cudaDrivers.Requires = []string{atLeast("nvidia-driver"), atLeast("nvidia-driver-cuda-libs"), atLeast(nvml), atLeast("kmod-nvidia-latest-dkms")}
		pkgs = append(pkgs, cudaDrivers)
	}
	if rpmBranchOf(version) >= rpmFirstSplitNVMLBranch {
		open := pkg("nvidia-open", "noarch")
		open.Requires = []string{atLeast("nvidia-driver"), atLeast("nvidia-driver-cuda-libs"), atLeast(nvml), atLeast("kmod-nvidia-open-dkms")}
		pkgs = append(pkgs, open)
	}
	return pkgs
}

// cudaRPMStreamsYAML is the repository's modules.yaml: for every branch
// among versions its -dkms and -open streams, and latest-dkms and open-dkms
// following the highest branch (genmodules.py, whose document shape this
// is: modulemd version 2, name nvidia-driver, artifacts as NEVRAs, a
// default profile).
func cudaRPMStreamsYAML(pkgs []RPMPackage) []byte {
	byBranch := map[int][]RPMPackage{}
	for _, p := range pkgs {
		byBranch[rpmBranchOf(p.Version)] = append(byBranch[rpmBranchOf(p.Version)], p)
	}
	var branches []int
	for b := range byBranch {
		branches = append(branches, b)
	}
	sort.Ints(branches)
	type stream struct {
		name   string
		branch int
		open   bool
	}
	var streams []stream
	latestProprietary := 0
	for _, b := range branches {
		if b < rpmFirstOpenOnlyBranch {
			streams = append(streams, stream{fmt.Sprintf("%d-dkms", b), b, false})
			latestProprietary = b
		}
		if b >= rpmFirstOpenBranch {
			streams = append(streams, stream{fmt.Sprintf("%d-open", b), b, true})
		}
	}
	if n := len(branches); n > 0 {
		latest := branches[n-1]
		if latestProprietary > 0 {
			streams = append(streams, stream{"latest-dkms", latestProprietary, false})
		}
		if latest >= rpmFirstOpenBranch {
			streams = append(streams, stream{"open-dkms", latest, true})
		}
	}

	var b strings.Builder
	for i, s := range streams {
		kmod, otherKmod, otherMeta := "kmod-nvidia-latest-dkms", "kmod-nvidia-open-dkms", "nvidia-open"
		if s.open {
			kmod, otherKmod, otherMeta = otherKmod, kmod, "cuda-drivers"
		}
		var artifacts []string
		profile := map[string]bool{kmod: true}
		for _, p := range byBranch[s.branch] {
			if p.Name == otherKmod || p.Name == otherMeta {
				continue
			}
			artifacts = append(artifacts, p.NEVRA())
			if p.Name != "nvidia-kmod-common" {
				profile[p.Name] = true
			}
		}
		sort.Strings(artifacts)
		var profileNames []string
		for name := range profile {
			profileNames = append(profileNames, name)
		}
		sort.Strings(profileNames)

		fmt.Fprintf(&b, "---\ndocument: modulemd\nversion: 2\ndata:\n")
		fmt.Fprintf(&b, "    name: nvidia-driver\n    stream: %s\n    version: %d\n    context: %08x\n    arch: x86_64\n", s.name, 20251101000000+i, s.branch*16+len(s.name))
		fmt.Fprintf(&b, "    summary: Nvidia driver for %s branch\n    description: >-\n        Model of NVIDIA's nvidia-driver module, branch %d.\n", s.name, s.branch)
		fmt.Fprintf(&b, "    license:\n        module:\n            - MIT\n    artifacts:\n        rpms:\n")
		for _, a := range artifacts {
			fmt.Fprintf(&b, "            - %s\n", a)
		}
		fmt.Fprintf(&b, "    profiles:\n        default:\n            description: Default installation\n            rpms:\n")
		for _, name := range profileNames {
			fmt.Fprintf(&b, "                - %s\n", name)
		}
		b.WriteString("...\n")
	}
	// The module's defaults, as genmodules.py writes them: latest-dkms is
	// the default stream (what dnf resolves with no stream enabled), and
	// every stream's default profile is the one named "default" (what `dnf
	// module install nvidia-driver:<stream>` installs).
	b.WriteString("---\ndocument: modulemd-defaults\nversion: 1\ndata:\n    module: nvidia-driver\n    stream: latest-dkms\n    profiles:\n")
	for _, s := range streams {
		fmt.Fprintf(&b, "        %s: [default]\n", s.name)
	}
	b.WriteString("...\n")
	return []byte(b.String())
}

// cudaRPMRepoFile is the repository's .repo file, cuda-<distro>.repo, as
// `dnf config-manager --add-repo` fetches it: one repository named
// cuda-<distro>-x86_64, its baseurl, gpgcheck on, and the key beside the
// packages.
func cudaRPMRepoFile(distro string) string {
	base := "https://developer.download.nvidia.com/compute/cuda/repos/" + distro + "/x86_64"
	return fmt.Sprintf("[cuda-%[1]s-x86_64]\nname=cuda-%[1]s-x86_64\nbaseurl=%[2]s\nenabled=1\ngpgcheck=1\ngpgkey=%[2]s/%[3]s\n", distro, base, rpmKeyFileName)
}

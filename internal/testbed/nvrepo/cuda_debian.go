package nvrepo

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The model of NVIDIA's debian12 and debian13 CUDA repositories,
// https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
// and .../debian13/x86_64/ (and .../sbsa/ for arm64 servers), laid out
// alike ([distros]). Every shape below names its source;
// "chosen" marks shapes no source we could read states, chosen to match
// Debian's own nvidia-graphics-drivers packaging, which NVIDIA's debian12
// repository follows (same package names: nvidia-driver, nvidia-alternative,
// nvidia-kernel-dkms, libcuda1, libnvidia-ml1, firmware-nvidia-gsp, ...).
//
// Sources:
//   [guide]   NVIDIA Driver Installation Guide,
//             https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/
//             (Debian: "apt install nvidia-open" for the open kernel modules,
//             "apt install cuda-drivers" for the proprietary ones; "Version
//             locking": pinning packages nvidia-driver-pinning-<branch>, to
//             be installed before the driver; its examples use branch 590).
//   [recent]  the guide's "Recent updates": "Driver pinning packages have been
//             introduced for Debian and Ubuntu to track specific driver
//             branches", "install the pinning package prior to installing
//             the driver".
//   [forum]   https://forums.developer.nvidia.com/t/debian-cuda-drivers-580-package-580-105-08-1-improperly-pulls-in-v590-components/353805 :
//             cuda-drivers-580 580.105.08-1 "Depends: nvidia-driver (>= 580.65.06),
//             nvidia-driver-cuda (>= 580.65.06), nvidia-kernel-dkms (>= 580.65.06),
//             nvidia-settings (>= 580.65.06), nvidia-xconfig (>= 580.65.06)":
//             unbounded, with the branch's first release as the floor, so
//             the newest branch's stack is installed (issue 15, defect 1).
//   [debian]  Debian 12's own nvidia-graphics-drivers 535.261.03-1 (bookworm
//             non-free, `apt-cache show`): nvidia-driver Depends
//             "nvidia-driver-libs (= V), nvidia-driver-bin (= V), ...,
//             nvidia-alternative (= V), nvidia-kernel-dkms (= V) |
//             nvidia-kernel-U | nvidia-open-kernel-U", Recommends
//             "nvidia-settings (>= 535), libnvidia-cfg1 (= V),
//             nvidia-persistenced (>= 535)", Provides nvidia-driver-any;
//             nvidia-kernel-dkms Depends "firmware-nvidia-gsp (= U) |
//             firmware-nvidia-gsp-U, nvidia-kernel-support--v1, dkms",
//             Provides "nvidia-kernel-U, nvidia-kernel-dkms-any (= U)";
//             libnvidia-ml1 Depends "nvidia-alternative (= V)", Provides
//             "libnvidia-ml.so.1 (= U)"; libcuda1 likewise (+ libcuda1-any);
//             nvidia-smi Depends "nvidia-alternative (= V), libnvidia-ml1 (= V)";
//             nvidia-kernel-support Depends "nvidia-alternative (= V)",
//             Provides "nvidia-kernel-support--v1"; libnvidia-cfg1 Provides
//             "libnvidia-cfg.so.1 (= U), libnvidia-cfg1-any". (V is the
//             Debian version 535.261.03-1, U the upstream 535.261.03.)
//   [nv550]   apt's report for NVIDIA's debian12 nvidia-driver 550.90.12-1
//             (README of a tool quoted in the code corpus, find_string
//             "nvidia-kernel-open-dkms ("): "nvidia-kernel-dkms (= 550.90.12-1)
//             | nvidia-kernel-545.23.08 | nvidia-kernel-open-dkms (= 550.90.12-1)",
//             and the same "(= V)" Depends as [debian]: in NVIDIA's repository
//             the open module package is nvidia-kernel-open-dkms, at the
//             driver's version.
//   [blog]    NVIDIA's "transitions fully towards open-source GPU kernel
//             modules" post (560 packaging conventions): Debian "apt-get
//             install nvidia-open" for the latest, "apt-get install
//             nvidia-open-560" for a branch. So the open flavor of branch B
//             on Debian is nvidia-open-B, not Ubuntu's nvidia-driver-B-open
//             (issue 15, defect 4).
//   [pref]    NVIDIA's apt preference for locking a driver version, as
//             reproduced from NVIDIA's instructions in deployment guides
//             (code corpus, find_string "src:*nvidia*:any"):
//             "Package: src:*nvidia*:any src:cuda-drivers:any src:cuda-compat:any"
//             "Pin: version <version>" "Pin-Priority: 1000".
//   [distros] the Driver Installation Guide's "Linux System Requirements"
//             (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html,
//             and its 610 edition): "Debian 12 | debian12 | amd64", "Debian 13 |
//             debian13 | amd64"; public setups of the debian13 repository use
//             the same names as debian12 (nvidia-driver-pinning-580 with
//             cuda-drivers-580, nvidia-driver-pinning-610 with cuda-drivers-610,
//             nvidia-open, nvidia-kernel-open-dkms; code corpus, find_string
//             "repos/debian13/x86_64").
//   [branches] NVIDIA's data center drivers, "Supported Drivers and CUDA
//             Toolkit Versions" (docs.nvidia.com/datacenter/tesla/drivers/615/
//             and /620/): R535 Long Term Support Branch, end of life June 2026;
//             R580 Long Term Support Branch, June 2028; R595 Production Branch,
//             March 2027; R610 New Feature Branch, August 2026; R620 Long Term
//             Support Branch, September 2029. 615 is a New Feature Branch with
//             its own Driver Installation Guide edition (Release 615, Sep 2026),
//             the last with proprietary kernel modules (internal/bootstrap's
//             lifecycle table, driver_lifecycle.go).
//   [open620] the Driver Installation Guide, 620 edition, "Recent Updates ›
//             Proprietary Kernel Modules Removed" (Driver_Installation_Guide.pdf
//             of .../driver-installation-guide/620/): no proprietary kernel
//             modules from 620 on, so branch 620 has no nvidia-kernel-dkms and
//             no cuda-drivers-620 or cuda-drivers at 620 (both depend on it,
//             [forum]).
//   [relver]  releases seen in NVIDIA's apt repositories, as public setups
//             install them (code corpus, find_string "nvidia-open=610" and
//             "nvidia-driver-pinning-595"): 595.71.05-1 (debian13,
//             "nvidia-open=595.71.05-1"), 610.43.02-1 and 610.57.04-1
//             ("nvidia-open=610.43.02-1", "nvidia-open=610.57.04-1"), 615.71.09
//             ("in NVIDIA's repository it installs the newest driver, currently
//             615.71.09", of cuda-drivers); and
//             version pinning packages next to the branch ones:
//             "nvidia-driver-pinning-595.71.05 ... APT driver pinning file for
//             driver version 595.71.05", shipping
//             /etc/apt/preferences.d/nvidia-driver-pin with "Pin-Priority 1000
//             on version <ver>-*".
//   [keyring] NVIDIA CUDA Installation Guide for Linux, network repository
//             on Debian: download .../repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb
//             and `dpkg -i` it; it installs /usr/share/keyrings/cuda-archive-keyring.gpg
//             and /etc/apt/sources.list.d/cuda-debian12-x86_64.list.
//
// Chosen (no source seen):
//   - nvidia-open-B's Depends mirror cuda-drivers-B's [forum] with
//     nvidia-kernel-open-dkms for nvidia-kernel-dkms; cuda-drivers and
//     nvidia-open (unversioned) depend "(= V)" on their branch metapackage.
//   - nvidia-driver-cuda Depends "libcuda1 (= V), libnvidia-ml1 (= V),
//     nvidia-smi (= V)" (Debian has no such package).
//   - nvidia-kernel-dkms and nvidia-kernel-open-dkms conflict with each other
//     (both build the "nvidia" DKMS module; Debian's open one is separate).
//   - The pinning package is nvidia-driver-pinning-B, version "B-1",
//     Architecture all, Source nvidia-driver-pinning; it installs
//     /etc/apt/preferences.d/nvidia-driver-pinning-B with [pref]'s stanza and
//     "Pin: version B.*"; all pinning packages Provide and Conflict with
//     the virtual nvidia-driver-pinning (Debian policy 7.6.2's pattern for
//     mutually exclusive packages), so installing one swaps out another.
//     It is a conffile (under /etc, dh_installdeb(1)): removing, not purging,
//     the package leaves the pin in force.
//   - nvidia-driver-libs Depends only "nvidia-alternative (= V)" (Debian's
//     GL/EGL libraries are left out); nvidia-driver-bin, nvidia-vdpau-driver
//     and xserver-xorg-video-nvidia are left out of nvidia-driver's Depends.
//   - nvidia-persistenced Depends "libnvidia-cfg1 (>= B)".
//   - dkms and linux-headers-<arch> are tiny packages of this repository, so
//     no test needs Debian's archive.
//   - Release "Origin: NVIDIA", "Label: NVIDIA CUDA".
//   - Versions no source gives: 535.261.03-1 for NVIDIA's 535 (Debian's own
//     bookworm release of 535, [debian]) and 620.41.06-1 for 620 (no 620
//     release was found).
//   - The debian13 model starts at branch 580: no source we could read
//     shows an older branch in debian13 (the public setups above start at
//     580); so there, asking 535 is a branch the repository does not offer.
//   - The version pinning package's stanza names the stack as
//     CUDADebianPinningPackage's does, pinned to "version <ver>-*" ([relver]
//     gives the file and the pin, not its Package line). It neither
//     Provides nor Conflicts with nvidia-driver-pinning, so it can sit next
//     to a branch's pinning package (no source says whether NVIDIA's can;
//     the model takes the case the step has to handle).

// CUDAAptBranch is one driver branch of a model of NVIDIA's apt
// repositories (Debian's here, Ubuntu's in cuda_ubuntu.go).
type CUDAAptBranch struct {
	Branch string // "580"
	// Versions are the branch's Debian versions, oldest first
	// ("580.95.05-1", Ubuntu's "580.95.05-1ubuntu1"); on Debian the first
	// is the metapackages' floor [forum].
	Versions []string
	Pinning  bool // the repository has nvidia-driver-pinning-<Branch>
	// OpenOnly: the branch has no proprietary kernel modules, so no
	// nvidia-kernel-dkms, cuda-drivers-<Branch> or cuda-drivers [open620].
	OpenOnly bool
}

// CUDADebianBranch is one driver branch of the Debian model.
type CUDADebianBranch = CUDAAptBranch

// CUDADebianBranches is the default model: branch 550 without a pinning
// package, 570 and 580 with one (580 with two releases), and a newest
// branch 590 that unbounded dependencies pull in.
var CUDADebianBranches = []CUDADebianBranch{
	{Branch: "550", Versions: []string{"550.163.01-1"}},
	{Branch: "570", Versions: []string{"570.195.03-1"}, Pinning: true},
	{Branch: "580", Versions: []string{"580.95.05-1", "580.105.08-1"}, Pinning: true},
	{Branch: "590", Versions: []string{"590.44.01-1"}, Pinning: true},
}

// CUDADebian12Today is NVIDIA's debian12 repository with every branch NVIDIA
// publishes in late 2026 [branches]: 535 (end of life, no pinning package,
// as before 570), 570 and 580 (long-term support, two releases), 590, 595
// (production), 610 and 615 (new feature) and 620 (long-term support, open
// kernel modules only [open620]), each with its pinning package from 570 on.
var CUDADebian12Today = []CUDADebianBranch{
	{Branch: "535", Versions: []string{"535.261.03-1"}},
	{Branch: "570", Versions: []string{"570.195.03-1"}, Pinning: true},
	{Branch: "580", Versions: []string{"580.95.05-1", "580.105.08-1"}, Pinning: true},
	{Branch: "590", Versions: []string{"590.44.01-1"}, Pinning: true},
	{Branch: "595", Versions: []string{"595.71.05-1"}, Pinning: true},
	{Branch: "610", Versions: []string{"610.43.02-1", "610.57.04-1"}, Pinning: true},
	{Branch: "615", Versions: []string{"615.71.09-1"}, Pinning: true},
	{Branch: "620", Versions: []string{"620.41.06-1"}, Pinning: true, OpenOnly: true},
}

// CUDADebian13Today is NVIDIA's debian13 repository in late 2026:
// debian12's branches and releases from 580 on (see "Chosen").
var CUDADebian13Today = cudaBranchesFrom(CUDADebian12Today, "580")

// cudaBranchesFrom is the branches of all from first on.
func cudaBranchesFrom(all []CUDADebianBranch, first string) []CUDADebianBranch {
	i := slices.IndexFunc(all, func(b CUDADebianBranch) bool { return b.Branch == first })
	if i < 0 {
		panic("nvrepo: no branch " + first) // a literal of this file
	}
	return slices.Clone(all[i:])
}

// CUDADebianOptions configures BuildCUDADebian.
type CUDADebianOptions struct {
	// Release is NVIDIA's repository directory: "debian12" (default) or
	// "debian13" [distros].
	Release  string
	Arch     string             // NVIDIA's repository architecture: "x86_64" (default) or "sbsa" (arm64)
	Branches []CUDADebianBranch // default CUDADebianBranches
	Key      *SigningKey        // default: the process's model key
}

// cudaArch maps NVIDIA's repository architecture to Debian's and the
// multiarch triplet.
func cudaArch(arch string) (debArch, triplet string, err error) {
	switch arch {
	case "", "x86_64":
		return "amd64", "x86_64-linux-gnu", nil
	case "sbsa":
		return "arm64", "aarch64-linux-gnu", nil
	}
	return "", "", fmt.Errorf("nvrepo: CUDADebianOptions.Arch %q: use \"x86_64\" or \"sbsa\"", arch)
}

// BuildCUDADebian builds the model of NVIDIA's debian12 (or debian13) CUDA
// repository, signed, with cuda-keyring_1.1-1_all.deb in it. Mount it with
// s.Mount(r.Address(), r.Dir()).
func BuildCUDADebian(t testing.TB, opts CUDADebianOptions) *DebianRepo {
	t.Helper()
	if opts.Arch == "" {
		opts.Arch = "x86_64"
	}
	if opts.Release == "" {
		opts.Release = "debian12"
	}
	if opts.Release != "debian12" && opts.Release != "debian13" {
		t.Fatalf("nvrepo: CUDADebianOptions.Release %q: use \"debian12\" or \"debian13\"", opts.Release)
	}
	if opts.Branches == nil {
		opts.Branches = CUDADebianBranches
	}
	drivers := cudaAptDrivers(t, opts.Arch, opts.Branches, CUDADebianDriverPackages, CUDADebianPinningPackage)
	return newCUDAAptRepo(t, opts.Release, opts.Arch, opts.Key, drivers)
}

// cudaAptDrivers are the driver packages of every version of branches,
// made by packages, and each branch's pinning package where it has one.
func cudaAptDrivers(t testing.TB, arch string, branches []CUDAAptBranch, packages func(arch string, b CUDAAptBranch, version string) ([]DebPackage, error), pinning func(branch string) DebPackage) []DebPackage {
	t.Helper()
	var drivers []DebPackage
	for _, b := range branches {
		for _, v := range b.Versions {
			p, err := packages(arch, b, v)
			if err != nil {
				t.Fatal(err)
			}
			drivers = append(drivers, p...)
		}
		if b.Pinning {
			drivers = append(drivers, pinning(b.Branch))
		}
	}
	return drivers
}

// newCUDAAptRepo is NVIDIA's flat apt repository of a release
// ("debian12", "ubuntu2404") and architecture ("x86_64", "sbsa"), signed
// with key (the process's own when nil): the release's cuda-keyring, dkms,
// the kernel headers, and drivers.
func newCUDAAptRepo(t testing.TB, release, arch string, key *SigningKey, drivers []DebPackage) *DebianRepo {
	t.Helper()
	debArch, _, err := cudaArch(arch)
	if err != nil {
		t.Fatal(err)
	}
	if key == nil {
		if key, err = processKey(); err != nil {
			t.Fatal(err)
		}
	}
	address := cudaRepoAddress(release, arch)
	pkgs := append([]DebPackage{CUDAKeyring(release, arch, key), cudaDKMS(), cudaHeaders(debArch)}, drivers...)
	return newDebianRepo(t, address, ".", "NVIDIA", "NVIDIA CUDA", key, pkgs)
}

// cudaRepoAddress is where NVIDIA serves the apt repository of a release
// and architecture, without the scheme.
func cudaRepoAddress(release, arch string) string {
	return "developer.download.nvidia.com/compute/cuda/repos/" + release + "/" + arch + "/"
}

// CUDAKeyring is the cuda-keyring_1.1-1_all of a release of NVIDIA's apt
// repositories, Debian's and Ubuntu's alike ([keyring]; [ubuntu] in
// cuda_ubuntu.go): the repository's key and its sources.list entry
// (cuda-<release>-<arch>.list).
func CUDAKeyring(release, arch string, key *SigningKey) DebPackage {
	return DebPackage{
		Name: "cuda-keyring", Version: "1.1-1", Arch: "all",
		Files: map[string][]byte{
			"/usr/share/keyrings/cuda-archive-keyring.gpg": key.PublicKeyring(),
			"/etc/apt/sources.list.d/cuda-" + release + "-" + arch + ".list": []byte(
				"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://" + cudaRepoAddress(release, arch) + " /\n"),
		},
		Description: "NVIDIA CUDA repository keyring (model)",
	}
}

// CUDADebianPinningPackage is nvidia-driver-pinning-<branch> (see "Chosen").
func CUDADebianPinningPackage(branch string) DebPackage {
	return DebPackage{
		Name: "nvidia-driver-pinning-" + branch, Version: branch + "-1", Arch: "all", Source: "nvidia-driver-pinning",
		Provides: "nvidia-driver-pinning", Conflicts: "nvidia-driver-pinning",
		Files: map[string][]byte{
			"/etc/apt/preferences.d/nvidia-driver-pinning-" + branch: []byte(
				"Package: src:*nvidia*:any src:cuda-drivers:any src:cuda-compat:any\n" +
					"Pin: version " + branch + ".*\n" +
					"Pin-Priority: 1000\n"),
		},
		Description: "Pins the NVIDIA driver packages to branch " + branch + " (model)",
	}
}

// CUDADebianVersionPinningPackage is nvidia-driver-pinning-<upstream
// version> [relver]: it pins the stack to one release ("Pin: version
// <version>-*"), from /etc/apt/preferences.d/nvidia-driver-pin.
func CUDADebianVersionPinningPackage(upstream string) DebPackage {
	return DebPackage{
		Name: "nvidia-driver-pinning-" + upstream, Version: upstream + "-1", Arch: "all", Source: "nvidia-driver-pinning",
		Files: map[string][]byte{
			"/etc/apt/preferences.d/nvidia-driver-pin": []byte(
				"Package: src:*nvidia*:any src:cuda-drivers:any src:cuda-compat:any\n" +
					"Pin: version " + upstream + "-*\n" +
					"Pin-Priority: 1000\n"),
		},
		Description: "APT driver pinning file for driver version " + upstream + " (model)",
	}
}

// CUDADebianDriverPackages is one driver release's packages: the stack
// (from nvidia-graphics-drivers, [debian] and [nv550]) and the branch's
// metapackages ([forum], [blog]).
func CUDADebianDriverPackages(arch string, branch CUDADebianBranch, version string) ([]DebPackage, error) {
	debArch, triplet, err := cudaArch(arch)
	if err != nil {
		return nil, err
	}
	upstream, _, ok := strings.Cut(version, "-")
	if !ok || !strings.HasPrefix(upstream, branch.Branch+".") {
		return nil, fmt.Errorf("nvrepo: driver version %q is not a Debian version of branch %s (want %s.x.y-r)", version, branch.Branch, branch.Branch)
	}
	floor, _, _ := strings.Cut(branch.Versions[0], "-")
	v, u, b := version, upstream, branch.Branch
	lib := "/usr/lib/" + triplet + "/"
	stack := func(name, depends string) DebPackage {
		return DebPackage{Name: name, Version: v, Arch: debArch, Source: "nvidia-graphics-drivers", Depends: depends}
	}
	alt := "nvidia-alternative (= " + v + ")"
	kernel := "nvidia-kernel-dkms (= " + v + ") | nvidia-kernel-" + u + " | nvidia-kernel-open-dkms (= " + v + ")"
	dkmsDepends := "firmware-nvidia-gsp (= " + u + ") | firmware-nvidia-gsp-" + u + ", nvidia-kernel-support--v1, dkms"

	pkgs := []DebPackage{
		withProvides(stack("nvidia-alternative", ""), "nvidia-alternative-"+u+", nvidia-alternative-any"),
		withFiles(withProvides(stack("libnvidia-ml1", alt), "libnvidia-ml.so.1 (= "+u+")"), lib+"libnvidia-ml.so."+u, u),
		withFiles(withProvides(stack("libcuda1", alt), "libcuda.so.1 (= "+u+"), libcuda1-any"), lib+"libcuda.so."+u, u),
		withFiles(withProvides(stack("libnvidia-cfg1", alt), "libnvidia-cfg.so.1 (= "+u+"), libnvidia-cfg1-any"), lib+"libnvidia-cfg.so."+u, u),
		withFiles(stack("nvidia-smi", alt+", libnvidia-ml1 (= "+v+")"), "/usr/bin/nvidia-smi", nvidiaSMIScript),
		withFiles(withProvides(stack("firmware-nvidia-gsp", ""), "firmware-nvidia-gsp-"+u), "/lib/firmware/nvidia/"+u+"/gsp_tu10x.bin", u),
		withProvides(stack("nvidia-kernel-support", alt), "nvidia-kernel-support--v1, nvidia-kernel-support-any"),
		withFiles(withConflicts(withProvides(stack("nvidia-kernel-dkms", dkmsDepends), "nvidia-kernel-"+u+", nvidia-kernel-dkms-any (= "+u+")"), "nvidia-kernel-open-dkms"),
			"/usr/src/nvidia-current-"+u+"/dkms.conf", "PACKAGE_NAME=\"nvidia-current\"\nPACKAGE_VERSION=\""+u+"\"\n"),
		withFiles(withConflicts(withProvides(DebPackage{Name: "nvidia-kernel-open-dkms", Version: v, Arch: debArch, Source: "nvidia-open-gpu-kernel-modules", Depends: dkmsDepends},
			"nvidia-open-kernel-"+u+", nvidia-kernel-dkms-any (= "+u+")"), "nvidia-kernel-dkms"),
			"/usr/src/nvidia-current-open-"+u+"/dkms.conf", "PACKAGE_NAME=\"nvidia-current-open\"\nPACKAGE_VERSION=\""+u+"\"\n"),
		withProvides(stack("nvidia-driver-libs", alt), "nvidia-driver-libs-any"),
		func() DebPackage {
			p := withProvides(stack("nvidia-driver", "nvidia-driver-libs (= "+v+"), "+alt+", "+kernel), "nvidia-driver-any")
			p.Recommends = "nvidia-settings (>= " + b + "), libnvidia-cfg1 (= " + v + "), nvidia-persistenced (>= " + b + ")"
			return p
		}(),
		stack("nvidia-driver-cuda", "libcuda1 (= "+v+"), libnvidia-ml1 (= "+v+"), nvidia-smi (= "+v+")"),
		{Name: "nvidia-persistenced", Version: v, Arch: debArch, Depends: "libnvidia-cfg1 (>= " + b + ")"},
		{Name: "nvidia-settings", Version: v, Arch: debArch},
		{Name: "nvidia-xconfig", Version: v, Arch: debArch},
		{Name: "cuda-drivers-" + b, Version: v, Arch: debArch, Source: "cuda-drivers",
			Depends: atLeast(floor, "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-dkms", "nvidia-settings", "nvidia-xconfig")},
		{Name: "cuda-drivers", Version: v, Arch: debArch, Source: "cuda-drivers", Depends: "cuda-drivers-" + b + " (= " + v + ")"},
		{Name: "nvidia-open-" + b, Version: v, Arch: debArch, Source: "nvidia-open",
			Depends: atLeast(floor, "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms")},
		{Name: "nvidia-open", Version: v, Arch: debArch, Source: "nvidia-open", Depends: "nvidia-open-" + b + " (= " + v + ")"},
	}
	if branch.OpenOnly {
		// [open620]: no proprietary kernel modules, and so none of the
		// metapackages that depend on them.
		kept := pkgs[:0]
		for _, p := range pkgs {
			switch p.Name {
			case "nvidia-kernel-dkms", "cuda-drivers-" + b, "cuda-drivers":
			default:
				kept = append(kept, p)
			}
		}
		pkgs = kept
	}
	for i := range pkgs {
		if pkgs[i].Files == nil {
			pkgs[i].Files = map[string][]byte{"/usr/share/doc/" + pkgs[i].Name + "/model-version": []byte(v + "\n")}
		}
	}
	return pkgs, nil
}

// nvidiaSMIScript answers as nvidia-smi does where no NVIDIA kernel module
// is loaded (a chroot, an image build): exit status 9 and this message.
const nvidiaSMIScript = "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n"

func cudaDKMS() DebPackage {
	return DebPackage{Name: "dkms", Version: "3.0.10-8+deb12u1", Arch: "all", Recommends: "linux-headers-amd64 | linux-headers-arm64 | linux-headers-generic",
		Files: map[string][]byte{"/usr/share/doc/dkms/model-version": []byte("3.0.10-8+deb12u1\n")}, Description: "Dynamic Kernel Module System (model: builds nothing)"}
}

func cudaHeaders(debArch string) DebPackage {
	return DebPackage{Name: "linux-headers-" + debArch, Version: "6.1.158-1", Arch: debArch,
		Files: map[string][]byte{"/usr/share/doc/linux-headers-" + debArch + "/model-version": []byte("6.1.158-1\n")}, Description: "Header files for Linux (model: empty)"}
}

// atLeast is "a (>= v), b (>= v), ...".
func atLeast(v string, names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " (>= " + v + ")"
	}
	return strings.Join(parts, ", ")
}

func withProvides(p DebPackage, provides string) DebPackage   { p.Provides = provides; return p }
func withConflicts(p DebPackage, conflicts string) DebPackage { p.Conflicts = conflicts; return p }
func withFiles(p DebPackage, path, content string) DebPackage {
	p.Files = map[string][]byte{path: []byte(content)}
	return p
}

package nvrepo

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The model of NVIDIA's CUDA repository for Ubuntu,
// https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/
// (ubuntu2204 and ubuntu2604 alike; .../sbsa/ for arm64 servers), across
// the 590 rename. Every shape names its source; "chosen" marks shapes no
// source we could read states.
//
// Sources:
//   [ubuntu]  NVIDIA Driver Installation Guide, Ubuntu chapter
//             (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/latest/ubuntu.html,
//             copied 2026-05-21 into public notes; code corpus, find_string
//             "libnvidia-compute nvidia-dkms-open"): cuda-keyring_1.1-1_all.deb
//             or "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg]
//             https://developer.download.nvidia.com/compute/cuda/repos/$distro/x86_64/ /"
//             in /etc/apt/sources.list.d/cuda-$distro-$arch.list;
//             "apt install nvidia-driver-pinning-<branch>" or
//             "nvidia-driver-pinning-<version>", before the driver; "Starting
//             with branch 590, branch designation was removed from Ubuntu
//             package names"; "apt install nvidia-open" / "cuda-drivers";
//             compute-only "apt -V install libnvidia-compute
//             nvidia-dkms-open" / "libnvidia-compute nvidia-dkms".
//   [apt]     `apt search nvidia-driver-pinning` on ubuntu2404 (public
//             notes, same find_string): "nvidia-driver-pinning-610
//             610-2ubuntu1 all  APT driver pinning file for driver branch
//             610", "nvidia-driver-pinning-595.71.05 595.71.05-1ubuntu1 all
//             APT driver pinning file for driver version 595.71.05"; driver
//             packages at "<upstream>-1ubuntu1" (nvidia-driver-open=610.43.02-1ubuntu1).
//   [pre590]  a public node script (same find_string): pre-590 "apt install
//             nvidia-driver-pinning-580" then "libnvidia-compute-580
//             nvidia-dkms-580": the branch-named names.
//   [archive] Ubuntu's packaging of the same driver (packages.ubuntu.com):
//             libnvidia-compute-590 Depends "nvidia-kernel-common-590-590.48.01"
//             (a virtual package provided by nvidia-kernel-common-590);
//             nvidia-dkms-595 Depends "dkms, nvidia-firmware-595-595.71.05,
//             nvidia-kernel-common-595 (<= 595.71.05-1), (>= 595.71.05),
//             nvidia-kernel-source-595 (<= 595.71.05-1), (>= 595.71.05)";
//             nvidia-headless-595 Depends nvidia-dkms-595,
//             nvidia-headless-no-dkms-595.
//   [620]     the guide's 620 edition, "Proprietary Kernel Modules Removed".
//   [pref]    the pinning stanza of the Debian model (cuda_debian.go [pref]).
//
// Chosen (no source seen):
//   - Each release is built in the branch's naming: base-<branch>[-open]
//     before 590, base[-open] from 590 ([ubuntu]'s rename applied to
//     [archive]'s names); no transitional packages across the rename.
//   - Relations use "(= V)" between the release's own packages (as
//     [archive]'s "<=/>=" pairs bound them to one release); the firmware
//     package is left out (the model's DKMS builds nothing), and the kernel
//     common dependency is the real package at "(= V)".
//   - All DKMS packages Provide and Conflict with the virtual
//     nvidia-dkms-kernel, all nvidia-utils packages with nvidia-utils-any
//     (one kernel module, one /usr/bin/nvidia-smi), so a mixed stack of
//     these cannot be installed at all; the other packages have distinct
//     files per release and do not conflict, so a leftover is visible.
//   - The metapackages: nvidia-open[-<b>] Depends nvidia-driver[-<b>]-open,
//     cuda-drivers[-<b>] Depends nvidia-driver[-<b>] (">=" the branch's
//     first release for the branch-named ones, as the Debian model's
//     [forum]); before 590 the unbranched cuda-drivers / nvidia-open
//     Depend "(= V)" on the branch's metapackage, from 590 "(= V)" on
//     nvidia-driver[-open].
//   - Sources: nvidia-graphics-drivers for the driver packages, cuda-drivers
//     and nvidia-open for the metapackages, so [pref]'s src: patterns pin
//     them all.
//   - The branch's pinning package is version "<branch>-1ubuntu1"; a
//     version's pinning package pins "Pin: version <version>-*".

// CUDAUbuntuBranch is one driver branch of the Ubuntu model; OpenOnly from
// branch 620 on [620].
type CUDAUbuntuBranch = CUDAAptBranch

// CUDAUbuntuBranches is the default model: 550 without a pinning package,
// 580 (two releases) before the rename, 595 after it, and 620 with only
// the open kernel modules.
var CUDAUbuntuBranches = []CUDAUbuntuBranch{
	{Branch: "550", Versions: []string{"550.163.01-1ubuntu1"}},
	{Branch: "580", Versions: []string{"580.95.05-1ubuntu1", "580.105.08-1ubuntu1"}, Pinning: true},
	{Branch: "595", Versions: []string{"595.71.05-1ubuntu1"}, Pinning: true},
	{Branch: "620", Versions: []string{"620.41.02-1ubuntu1"}, Pinning: true, OpenOnly: true},
}

// CUDAUbuntuOptions configures BuildCUDAUbuntu.
type CUDAUbuntuOptions struct {
	Release  string             // NVIDIA's directory: "ubuntu2404" (default), "ubuntu2204", "ubuntu2604"
	Arch     string             // "x86_64" (default) or "sbsa"
	Branches []CUDAUbuntuBranch // default CUDAUbuntuBranches
	Key      *SigningKey        // default: the process's model key
}

// BuildCUDAUbuntu builds the model of NVIDIA's CUDA repository for an
// Ubuntu release, signed, with cuda-keyring_1.1-1_all.deb in it. Mount it
// with s.Mount(r.Address(), r.Dir()).
func BuildCUDAUbuntu(t testing.TB, opts CUDAUbuntuOptions) *DebianRepo {
	t.Helper()
	if opts.Release == "" {
		opts.Release = "ubuntu2404"
	}
	if opts.Arch == "" {
		opts.Arch = "x86_64"
	}
	if opts.Branches == nil {
		opts.Branches = CUDAUbuntuBranches
	}
	drivers := cudaAptDrivers(t, opts.Arch, opts.Branches, CUDAUbuntuDriverPackages, CUDAUbuntuPinningPackage)
	return newCUDAAptRepo(t, opts.Release, opts.Arch, opts.Key, drivers)
}

// CUDAUbuntuPinningPackage is nvidia-driver-pinning-<branch> ([ubuntu],
// [apt]; its stanza as the Debian model's).
func CUDAUbuntuPinningPackage(branch string) DebPackage {
	p := CUDADebianPinningPackage(branch)
	p.Version = branch + "-1ubuntu1"
	p.Description = "APT driver pinning file for driver branch " + branch + " (model)"
	return p
}

// CUDAUbuntuVersionPinningPackage is nvidia-driver-pinning-<version>
// ([apt]): pins one driver version ("595.71.05").
func CUDAUbuntuVersionPinningPackage(upstream string) DebPackage {
	return DebPackage{
		Name: "nvidia-driver-pinning-" + upstream, Version: upstream + "-1ubuntu1", Arch: "all", Source: "nvidia-driver-pinning",
		Provides: "nvidia-driver-pinning", Conflicts: "nvidia-driver-pinning",
		Files: map[string][]byte{
			"/etc/apt/preferences.d/nvidia-driver-pinning-" + upstream: []byte(
				"Package: src:*nvidia*:any src:cuda-drivers:any src:cuda-compat:any\n" +
					"Pin: version " + upstream + "-*\n" +
					"Pin-Priority: 1000\n"),
		},
		Description: "APT driver pinning file for driver version " + upstream + " (model)",
	}
}

// CUDAUbuntuName is a package's name in a branch's naming: base-<branch>
// before 590, base from 590 on, "-open" after either for the open flavor.
func CUDAUbuntuName(base, branch string, open bool) string {
	if n, _ := strconv.Atoi(branch); n < 590 {
		base += "-" + branch
	}
	if open {
		base += "-open"
	}
	return base
}

// CUDAUbuntuDriverPackages is one driver release's packages, in its
// branch's naming.
func CUDAUbuntuDriverPackages(arch string, branch CUDAUbuntuBranch, version string) ([]DebPackage, error) {
	debArch, triplet, err := cudaArch(arch)
	if err != nil {
		return nil, err
	}
	upstream, _, ok := strings.Cut(version, "-")
	if !ok || !strings.HasPrefix(upstream, branch.Branch+".") {
		return nil, fmt.Errorf("nvrepo: driver version %q is not a version of branch %s (want %s.x.y-r)", version, branch.Branch, branch.Branch)
	}
	floor, _, _ := strings.Cut(branch.Versions[0], "-")
	b, v, u := branch.Branch, version, upstream
	unbranched := CUDAUbuntuName("x", b, false) == "x"
	name := func(base string, open bool) string { return CUDAUbuntuName(base, b, open) }
	eq := func(n string) string { return n + " (= " + v + ")" }
	lib := "/usr/lib/" + triplet + "/"
	pkg := func(n, depends string) DebPackage {
		return DebPackage{Name: n, Version: v, Arch: debArch, Source: "nvidia-graphics-drivers", Depends: depends}
	}
	common := name("nvidia-kernel-common", false)
	pkgs := []DebPackage{
		withProvides(pkg(common, ""), common+"-"+u),
		withFiles(pkg(name("libnvidia-compute", false), common+"-"+u), lib+"libnvidia-ml.so."+u, u),
		withFiles(pkg(name("libnvidia-gl", false), common+"-"+u), lib+"libGLX_nvidia.so."+u, u),
		func() DebPackage {
			p := withFiles(pkg(name("nvidia-utils", false), eq(name("libnvidia-compute", false))), "/usr/bin/nvidia-smi", nvidiaSMIScript)
			p.Provides, p.Conflicts, p.Replaces = "nvidia-utils-any", "nvidia-utils-any", "nvidia-utils-any"
			return p
		}(),
	}
	flavors := []bool{true}
	if !branch.OpenOnly {
		flavors = append(flavors, false)
	}
	for _, open := range flavors {
		source := name("nvidia-kernel-source", open)
		dkms := pkg(name("nvidia-dkms", open), "dkms, "+eq(common)+", "+eq(source))
		dkms.Provides, dkms.Conflicts = "nvidia-dkms-kernel", "nvidia-dkms-kernel"
		module := "nvidia"
		if open {
			module = "nvidia-open"
		}
		dkms.Files = map[string][]byte{"/usr/src/" + module + "-" + u + "/dkms.conf": []byte("PACKAGE_NAME=\"" + module + "\"\nPACKAGE_VERSION=\"" + u + "\"\n")}
		driver := pkg(name("nvidia-driver", open), eq(name("libnvidia-compute", false))+", "+eq(name("libnvidia-gl", false))+", "+eq(name("nvidia-utils", false))+", "+eq(name("nvidia-dkms", open)))
		meta, metaSource := "cuda-drivers", "cuda-drivers"
		if open {
			meta, metaSource = "nvidia-open", "nvidia-open"
		}
		pkgs = append(pkgs, pkg(source, ""), dkms, driver)
		if unbranched {
			pkgs = append(pkgs, DebPackage{Name: meta, Version: v, Arch: debArch, Source: metaSource, Depends: eq(driver.Name)})
		} else {
			pkgs = append(pkgs,
				DebPackage{Name: meta + "-" + b, Version: v, Arch: debArch, Source: metaSource, Depends: driver.Name + " (>= " + floor + ")"},
				DebPackage{Name: meta, Version: v, Arch: debArch, Source: metaSource, Depends: eq(meta + "-" + b)})
		}
	}
	for i := range pkgs {
		if pkgs[i].Files == nil {
			pkgs[i].Files = map[string][]byte{"/usr/share/doc/" + pkgs[i].Name + "/model-version": []byte(v + "\n")}
		}
	}
	return pkgs, nil
}

package nvrepo

import (
	"fmt"
	"strings"
	"testing"
)

// This file models the distribution side a driver install from NVIDIA's
// CUDA repository needs: the system-release package dnf reads $releasever
// from, the target kernel's development packages DKMS builds against, and
// dkms itself — from EPEL on RHEL and its rebuilds (EPEL's epel-release
// package adds the EPEL repository), from the distribution on Amazon Linux
// 2023 — and on RHEL 10 dnf's versionlock plugin package. The packages are
// empty markers with the names and provides dnf
// resolves: no kernel headers, no working dkms.

// DistroRPMOptions chooses the distribution to model.
type DistroRPMOptions struct {
	// Distro is "rocky9", "rocky10" or "amzn2023".
	Distro string
	// Kernel is the target kernel release, as uname -r prints it:
	// "5.14.0-427.13.1.el9_4.x86_64".
	Kernel string
	// EPELBaseURL is where the epel-release package's epel.repo points
	// (rocky9, rocky10): the directory the test puts BuildEPELRPM's copy in,
	// as a file:// URL. (EPEL's own epel.repo uses a metalink of Fedora's
	// mirror list.)
	EPELBaseURL string
}

// rpmKernelNVR splits "5.14.0-427.13.1.el9_4.x86_64" into version
// "5.14.0", release "427.13.1.el9_4" and arch "x86_64", as kernel-devel's
// name-version-release.arch spells it.
func rpmKernelNVR(kernel string) (version, release, arch string, err error) {
	version, rest, ok := strings.Cut(kernel, "-")
	dot := strings.LastIndex(rest, ".")
	if !ok || dot < 0 {
		return "", "", "", fmt.Errorf("nvrepo: kernel %q is not version-release.arch", kernel)
	}
	return version, rest[:dot], rest[dot+1:], nil
}

// BuildDistroRPM returns a fresh copy of the model of the distribution's
// own repository (BaseOS/AppStream on Rocky Linux, the Amazon Linux
// repository on AL2023), unsigned, to be reached at a file:// baseurl
// inside the root.
func BuildDistroRPM(t testing.TB, opts DistroRPMOptions) *RPMRepo {
	t.Helper()
	version, release, arch, err := rpmKernelNVR(opts.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	kernelPkg := func(name string) RPMPackage {
		return RPMPackage{Name: name, Version: version, Release: release, Arch: arch,
			Files: map[string]string{"/usr/src/kernels/" + opts.Kernel + "/" + name: opts.Kernel}}
	}
	var pkgs []RPMPackage
	switch opts.Distro {
	case "rocky9":
		pkgs = []RPMPackage{
			// rocky-release provides what dnf's releasever detection asks
			// for (system-release(releasever)), as Rocky's does.
			{Name: "rocky-release", Version: "9.4", Release: "1.7.el9", Arch: "noarch",
				Provides: []string{"system-release(releasever) = 9", "system-release = 9.4", "redhat-release = 9.4"}},
			kernelPkg("kernel-devel"),
			kernelPkg("kernel-headers"),
			{Name: "epel-release", Version: "9", Release: "8.el9", Arch: "noarch",
				Files: map[string]string{"/etc/yum.repos.d/epel.repo": "[epel]\nname=Extra Packages for Enterprise Linux 9 (model)\nbaseurl=" + opts.EPELBaseURL + "\nenabled=1\ngpgcheck=0"}},
		}
	case "rocky10":
		pkgs = []RPMPackage{
			{Name: "rocky-release", Version: "10.0", Release: "1.6.el10", Arch: "noarch",
				Provides: []string{"system-release(releasever) = 10", "system-release = 10.0", "redhat-release = 10.0"}},
			kernelPkg("kernel-devel"),
			kernelPkg("kernel-headers"),
			{Name: "epel-release", Version: "10", Release: "5.el10", Arch: "noarch",
				Files: map[string]string{"/etc/yum.repos.d/epel.repo": "[epel]\nname=Extra Packages for Enterprise Linux 10 (model)\nbaseurl=" + opts.EPELBaseURL + "\nenabled=1\ngpgcheck=0"}},
			// The versionlock plugin NVIDIA's guide has installed on RHEL
			// 10 (version-locking.html: "Make sure the
			// python3-dnf-plugin-versionlock package is installed"): a
			// marker; the plugin that runs is the root's own dnf-plugins-core.
			{Name: "python3-dnf-plugin-versionlock", Version: "4.7.0", Release: "8.el10", Arch: "noarch",
				Files: map[string]string{"/usr/share/doc/python3-dnf-plugin-versionlock/model": "model"}},
		}
	case "amzn2023":
		series := "kernel"
		if !strings.HasPrefix(opts.Kernel, "6.1.") {
			parts := strings.SplitN(opts.Kernel, ".", 3)
			series = "kernel" + parts[0] + "." + parts[1]
		}
		pkgs = []RPMPackage{
			{Name: "system-release", Version: "2023.6.20241111", Release: "0.amzn2023", Arch: "noarch",
				Provides: []string{"system-release(releasever) = 2023"}},
			kernelPkg(series + "-devel"),
			kernelPkg(series + "-headers"),
			kernelPkg(series + "-modules-extra"),
			kernelPkg(series + "-modules-extra-common"),
			rpmDKMS("amzn2023"),
		}
	default:
		t.Fatalf("nvrepo: no distribution model %q (rocky9, rocky10, amzn2023)", opts.Distro)
	}
	return cachedRPMRepo(t, rpmLayout{name: "distro-" + opts.Distro}, pkgs)
}

// BuildEPELRPM returns a fresh copy of the model of EPEL 9: dkms.
func BuildEPELRPM(t testing.TB) *RPMRepo {
	t.Helper()
	return BuildEPELRPMFor(t, "9")
}

// BuildEPELRPMFor returns a fresh copy of the model of EPEL for an
// enterprise Linux major release ("9", "10"): dkms.
func BuildEPELRPMFor(t testing.TB, major string) *RPMRepo {
	t.Helper()
	return cachedRPMRepo(t, rpmLayout{name: "epel" + major}, []RPMPackage{rpmDKMS("el" + major)})
}

func rpmDKMS(dist string) RPMPackage {
	return RPMPackage{Name: "dkms", Version: "3.1.0", Release: "1." + dist, Arch: "noarch",
		Files: map[string]string{"/usr/sbin/dkms": "model"}}
}

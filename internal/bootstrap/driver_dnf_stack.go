package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// This file reads the installed NVIDIA driver stack from the rpm database,
// so the driver step judges the branch by everything that makes the driver
// work, not by one package whose dependencies may have pulled in another
// branch.

// The capabilities of the stack. They are asked for by what the packages
// provide, not by package name, because the names changed over the
// branches while the capabilities did not:
//   - nvidia-driver: the driver package (NVIDIA/yum-packaging-nvidia-driver
//     nvidia-driver.spec, "Name: nvidia-driver");
//   - libnvidia-ml.so.1()(64bit): the NVML library, in nvidia-driver-NVML
//     in the older packaging (nvidia-driver.spec "%files NVML";
//     NVIDIA/cuda-repo-management genmodules.py BRANCH_PKGS) and in
//     libnvidia-ml in the compute-only packaging of 560 and later
//     (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/compute-only-and-desktop-installation.html);
//     rpmbuild derives the soname capability from the library itself;
//   - nvidia-kmod: the kernel module package of either flavor; both
//     kmod-nvidia-open-dkms and kmod-nvidia-latest-dkms declare "Provides:
//     nvidia-kmod = %{epoch}:%{version}" (NVIDIA/yum-packaging-dkms-nvidia
//     dkms-open-nvidia.spec and dkms-nvidia.spec), and which one provides
//     it is the installed flavor.
const (
	rpmDriverCapability = "nvidia-driver"
	rpmNVMLCapability   = "libnvidia-ml.so.1()(64bit)"
	rpmKmodCapability   = "nvidia-kmod"
)

// firstLibNVMLBranch is the first branch whose NVML library is the
// libnvidia-ml package: the driver was split into smaller packages for
// compute-only installs "Starting in 560"
// (driver-installation-guide/compute-only-and-desktop-installation.html);
// before, nvidia-driver-NVML carried it (nvidia-driver.spec "%files NVML").
const firstLibNVMLBranch = 560

// nvmlPackageName is the name of the package carrying the NVML library in
// a branch of NVIDIA's rpm repositories.
func nvmlPackageName(branch int) string {
	if branch >= firstLibNVMLBranch {
		return "libnvidia-ml"
	}
	return "nvidia-driver-NVML"
}

// staleNVML are the installed NVML packages that branch's packaging does
// not use: after a move across 560, the other generation's package, which
// no stream of the new branch carries and so no switch-to removes.
func (s rpmDriverStack) staleNVML(branch int) []string {
	want := nvmlPackageName(branch)
	var stale []string
	for _, p := range s.nvml {
		if p.name != want && (p.name == "libnvidia-ml" || p.name == "nvidia-driver-NVML") {
			stale = append(stale, p.name)
		}
	}
	return stale
}

// rpmPackage is one installed package: its name and epoch:version-release.
type rpmPackage struct {
	name, version string
}

func (p rpmPackage) String() string { return p.name + "-" + p.version }

// rpmDriverStack is what the rpm database holds of the driver: every
// package providing each capability (more than one is a broken stack: two
// kernel module flavors, say).
type rpmDriverStack struct {
	driver, nvml, kmod, meta []rpmPackage
	// names are all installed packages by name, with their
	// epoch:version-release: what the versionlock move names
	// (driver_dnf_versionlock.go) and whether its plugin is there.
	names map[string]string
}

func (s rpmDriverStack) empty() bool {
	return len(s.driver) == 0 && len(s.nvml) == 0 && len(s.kmod) == 0 && len(s.meta) == 0
}

// on is whether the whole stack is installed on the branch in the flavor:
// one driver, one NVML library and the flavor's kernel module package, all
// of the branch, and with withMeta the flavor's metapackage too (branches
// after 570 are installed through it; earlier ones through the module
// stream's default profile).
func (s rpmDriverStack) on(branch string, flavor dnfFlavor, withMeta bool) bool {
	parts := [][]rpmPackage{s.driver, s.nvml, s.kmod}
	if withMeta {
		parts = append(parts, s.meta)
	}
	for _, part := range parts {
		if len(part) != 1 || branchOf(part[0].version) != branch {
			return false
		}
	}
	return s.kmod[0].name == flavor.kmod && (!withMeta || s.meta[0].name == flavor.meta)
}

// String lists the stack for messages: "nvidia-driver-3:570.195.03-1.el9, …".
func (s rpmDriverStack) String() string {
	var names []string
	for _, part := range [][]rpmPackage{s.driver, s.nvml, s.kmod, s.meta} {
		for _, p := range part {
			names = append(names, p.String())
		}
	}
	if len(names) == 0 {
		return "no NVIDIA driver packages"
	}
	return strings.Join(names, ", ")
}

// readRPMDriverStack asks the target's rpm for every installed package with
// each capability it provides, in one query, and keeps the driver stack's.
// The metapackages of both flavors (nvidia-open, cuda-drivers) are kept:
// the other flavor's belongs to a stack to be replaced.
func readRPMDriverStack(ctx context.Context, h *Host) (rpmDriverStack, error) {
	out, err := h.Run(ctx, "rpm", "-qa", "--queryformat", "[%{=NAME}\t%{=EPOCHNUM}:%{=VERSION}-%{=RELEASE}\t%{PROVIDENAME}\n]")
	if err != nil {
		return rpmDriverStack{}, fmt.Errorf("asking rpm for the installed NVIDIA driver packages: %w", err)
	}
	metas := map[string]bool{"nvidia-open": true, "cuda-drivers": true}
	s := rpmDriverStack{names: map[string]string{}}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			continue
		}
		pkg, provide := rpmPackage{name: fields[0], version: fields[1]}, fields[2]
		key := provide + "\x00" + pkg.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		if provide == pkg.name {
			s.names[pkg.name] = pkg.version
		}
		switch {
		case provide == rpmDriverCapability && pkg.name == rpmDriverCapability:
			s.driver = append(s.driver, pkg)
		case provide == rpmNVMLCapability:
			s.nvml = append(s.nvml, pkg)
		case provide == rpmKmodCapability:
			s.kmod = append(s.kmod, pkg)
		case metas[provide] && pkg.name == provide:
			s.meta = append(s.meta, pkg)
		}
	}
	for _, part := range []*[]rpmPackage{&s.driver, &s.nvml, &s.kmod, &s.meta} {
		sort.Slice(*part, func(i, j int) bool { return (*part)[i].String() < (*part)[j].String() })
	}
	return s, nil
}

// rpmQuery is `rpm -q --queryformat format pkg`: the installed package's
// tags as format spells them, "" when it is not installed. rpm runs on the
// target (chroot for an image), which is where its database is.
func rpmQuery(ctx context.Context, h *Host, pkg, format string) (string, error) {
	out, err := h.Run(ctx, "rpm", "-q", "--queryformat", format, pkg)
	var cmdErr *CommandError
	if errors.As(err, &cmdErr) && cmdErr.Output.ExitCode == 1 {
		return "", nil // "package … is not installed"
	}
	if err != nil {
		return "", fmt.Errorf("asking rpm whether %s is installed: %w", pkg, err)
	}
	return strings.TrimSpace(string(out.Stdout)), nil
}

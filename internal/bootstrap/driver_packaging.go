package bootstrap

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// driverPackaging is what one distribution needs to install and pin a
// driver branch, and what its package database says is there already.
type driverPackaging struct {
	source   string   // "Ubuntu's archive", "NVIDIA's CUDA repository"
	packages []string // the driver packages the install names

	setup           []Change  // repository setup that is still missing
	release         []Command // releases holds of another branch or flavor
	releasePackages []string  // what release unholds, for the summary

	prepare []Command // before anything installs: apt-get update
	offered []Op      // after prepare: checks that the source offers the branch
	pin     []Command // pins the branch
	// pinFirst puts pin before install: NVIDIA's pinning package and dnf
	// module streams choose what the install resolves to; an apt hold can
	// only hold what is installed.
	pinFirst bool
	install  []Command

	// planned, when own is set, are the changes the packaging planned
	// itself (the Debian repository's branch lock and stack move, which
	// do not fit setup/pin/install); nothing left to do when empty.
	own     bool
	planned []Change
	// noStack: no driver package of this packaging is installed (a
	// running driver then came from elsewhere: a runfile, an AMI).
	noStack bool

	// stackNote says why the installed stack is not the branch, for the
	// install's summary ("driver stack on branch 550 (…), asked 580").
	stackNote string

	installed        bool   // the branch's packages, in the configured flavor
	installedVersion string // their version, "580.95.05-0ubuntu1"
	pinned           bool
}

// installChange installs (and pins) the branch in one change, so a failed
// install never leaves a pin to a branch that is not there.
func (p driverPackaging) installChange(cfg DriverConfig) Change {
	var cmds []Command
	if p.pinFirst && !p.pinned {
		cmds = append(cmds, p.pin...)
	}
	cmds = append(cmds, p.install...)
	if !p.pinFirst && !p.pinned {
		cmds = append(cmds, p.pin...)
	}
	ops := append(append(commandOps(p.prepare...), p.offered...), commandOps(cmds...)...)
	summary := fmt.Sprintf("install NVIDIA driver branch %s (%s kernel modules) from %s: %s, pinned to the branch", cfg.Branch, cfg.flavor(), p.source, strings.Join(p.packages, ", "))
	if p.stackNote != "" {
		summary += " (" + p.stackNote + ")"
	}
	return Change{Summary: summary, Ops: ops}
}

// pinChange pins packages that are installed already.
func (p driverPackaging) pinChange(cfg DriverConfig) Change {
	cmds := p.pin
	if p.pinFirst {
		// The pin is a package or a module stream: refresh the metadata
		// first, as the install would.
		cmds = append(append([]Command{}, p.prepare...), p.pin...)
	}
	return Change{
		Summary: fmt.Sprintf("pin the installed NVIDIA driver to branch %s so upgrades stay on it", cfg.Branch),
		Ops:     commandOps(cmds...),
	}
}

// packaging picks the distribution family's packaging.
func (s driverStep) packaging(ctx context.Context, h *Host, d Distro, kernel string) (driverPackaging, error) {
	switch {
	case d.Family == familyDebian && d.Release.ID == "ubuntu":
		return ubuntuDriverPackaging(h, d, s.cfg, kernel, s.arch)
	case d.Family == familyDebian:
		return debianCUDAPackaging(h, d, s.cfg, kernel, s.arch)
	case d.Family == familyAL2023 || d.Family == familyRHEL:
		return dnfPackaging(ctx, h, d, s.cfg, kernel, s.arch)
	}
	return driverPackaging{}, &UnsupportedOSError{Release: d.Release}
}

// cudaRepoArch is the architecture directory of NVIDIA's CUDA repositories:
// x86_64 and, for 64-bit Arm servers, sbsa.
func cudaRepoArch(goarch string) (string, error) {
	switch goarch {
	case "amd64":
		return "x86_64", nil
	case "arm64":
		return "sbsa", nil
	}
	return "", fmt.Errorf("NVIDIA's CUDA repositories have no packages for %s: only x86_64 and arm64 (sbsa)", goarch)
}

// cudaRepoBase is the URL of NVIDIA's CUDA repository for a release.
func cudaRepoBase(repo, arch string) string {
	return "https://developer.download.nvidia.com/compute/cuda/repos/" + repo + "/" + arch + "/"
}

// targetKernel is the kernel release the driver's modules are built for:
// the running kernel on a live machine, the only kernel under
// /lib/modules in an image; "" when an image has none or several (the
// kernel packages are then installed unversioned).
func targetKernel(h *Host, live bool) (string, error) {
	if live {
		data, exists, err := h.ReadFile("/proc/sys/kernel/osrelease")
		if err != nil {
			return "", fmt.Errorf("reading the running kernel's release: %w", err)
		}
		if !exists {
			return "", fmt.Errorf("/proc/sys/kernel/osrelease is missing: is /proc mounted?")
		}
		return strings.TrimSpace(string(data)), nil
	}
	for _, dir := range []string{"/lib/modules", "/usr/lib/modules"} {
		entries, err := os.ReadDir(h.Path(dir))
		if err != nil {
			continue
		}
		var kernels []string
		for _, e := range entries {
			if e.IsDir() {
				kernels = append(kernels, e.Name())
			}
		}
		if len(kernels) == 1 {
			return kernels[0], nil
		}
		return "", nil
	}
	return "", nil
}

// aptGetNoninteractive runs apt-get without questions, as an image build needs.
func aptGetNoninteractive(h *Host, args ...string) Command {
	return Command{Root: h.Root, Name: "env", Args: append([]string{"DEBIAN_FRONTEND=noninteractive", "apt-get"}, args...)}
}

// branchOf is the branch of a package version: "580" of "580.95.05-0ubuntu1"
// or "3:580.95.05-1.el9".
func branchOf(version string) string {
	if _, rest, found := strings.Cut(version, ":"); found {
		version = rest
	}
	branch, _, _ := strings.Cut(version, ".")
	return branch
}

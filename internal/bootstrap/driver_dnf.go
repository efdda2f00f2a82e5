package bootstrap

import (
	"context"
	"path"
	"strings"
)

// This file is the driver's dnf packaging for Amazon Linux 2023 and RHEL
// 8/9/10 (Rocky Linux, AlmaLinux, CentOS Stream), from NVIDIA's CUDA
// repository. What follows is the module stream lock of RHEL 8/9 and
// AL2023; RHEL 10 has no streams and its lock is dnf's versionlock plugin,
// written and moved by the step (driver_dnf_versionlock.go), with the same
// guarantees: the lock comes before the install, a move is one
// transaction, and a failed move leaves lock and stack agreeing.
//
// The lock. NVIDIA's Driver Installation Guide gives, for "Red Hat
// Enterprise Linux 8/9, AlmaLinux 8/9, Oracle Linux 8/9, Amazon Linux 2023,
// Rocky Linux 8/9", one way to install a specific branch: enable its module
// stream, then install the driver
//
//	# dnf module enable nvidia-driver:580-open
//	# dnf install nvidia-open
//
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html,
// tables "Open GPU kernel module installation" and "Proprietary GPU kernel
// module installation"; -dkms streams are the proprietary flavor). Its
// "Version locking" page keeps `dnf versionlock` for "distributions without
// mechanisms to clearly segregate branches inside the same repository" —
// RHEL 10 and Fedora, where the same table says `dnf versionlock
// \*nvidia\*580\*` — so on RHEL 8/9 and AL2023 the enabled stream is the
// lock, and this step does not add a versionlock there (a user's
// versionlock that holds another branch is refused at plan time:
// driver_dnf_versionlock.go).
// NVIDIA's packaging guide says what a stream locks: "the XXX and XXX-dkms
// streams lock driver updates to the specified driver branch"
// (NVIDIA/yum-packaging-nvidia-driver docs/guide-rhel8.md), and its
// repository generator lists every package of the branch as the stream's
// artifacts (NVIDIA/cuda-repo-management genmodules.py, BRANCH_PKGS), so
// the metapackages' unbounded ">=" dependencies resolve only inside the
// branch: with 580-open enabled, `dnf upgrade` never brings 590.
//
// Late-2026 branches. The guide's 620 edition still installs RHEL 8/9 and
// Amazon Linux 2023 through the stream
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/kernel-modules.html,
// same table), and its 595 edition switches flavors there with switch-to
// (…/595/advanced-options.html), so every branch keeps its streams; the
// 620 edition lists "Proprietary Kernel Modules Removed" (Recent Updates)
// and has no proprietary table, so from 620 there is no <branch>-dkms
// stream — a proprietary plan for it fails at validation
// (driver_lifecycle.go) before this file runs.
//
// Moving branches or flavors. The guide switches flavors with `dnf -y
// module switch-to nvidia-driver:<stream> --allowerasing`
// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/advanced-options.html,
// "Switching between Driver Module Flavors"). switch-to enables the new
// stream and, in the same transaction, moves every installed package of the
// module that the new stream also carries to its versions — up or down
// (dnf-module(8), "switch-to") — and with --allowerasing removes what
// conflicts with them (the other flavor's kernel module). So the whole
// stack moves together, and the stream is written only if that
// transaction succeeds (realdnf_failure_test.go: a 404 mid-move leaves
// stream and stack on the old branch). A package no stream of the new
// branch carries stays: the NVML package of the other packaging
// generation, removed after the move (driver_dnf_stack.go, staleNVML).
// This step uses switch-to for every move: branch up, branch down,
// flavor, and a stack that does not match the enabled stream.
//
// chroot, not --installroot. An image root is driven by running the root's
// own dnf and rpm under chroot(8) (runner.go), not by the build host's `dnf
// --installroot`:
//   - the rpm database belongs to the root's rpm: RHEL 8 keeps it in
//     BerkeleyDB, RHEL 9 and AL2023 in sqlite, and a host rpm of the other
//     kind cannot write it (RHEL 9's rpm reads BerkeleyDB only read-only;
//     Debian's rpm even defaults to ~/.rpmdb);
//   - the root's dnf plugins and their configuration apply, not the
//     host's: under --installroot "pluginpath and pluginconfpath are
//     relative to the host" (dnf5-installroot(7); dnf 4 does the same), so
//     the host's dnf would run without the root's config-manager,
//     versionlock and NVIDIA's dnf-plugin-nvidia (a stream artifact,
//     genmodules.py LATEST_PKGS) and with plugins of its own (Debian's dnf
//     enables its "local" plugin, whose unsigned repository fails
//     gpgcheck — seen while writing realdnf_*_test.go);
//   - the root's dnf version resolves the modules it was released with
//     (dnf 4 with libmodulemd on RHEL 8/9 and AL2023; a Fedora or RHEL 10
//     build host has dnf5, whose module support differs);
//   - a Packer build host need not have dnf at all (an Ubuntu runner
//     building an AL2023 AMI); the image always has it;
//   - the live case (Host.Root "/") runs the same commands without chroot,
//     so image builds and live hosts take one code path.
// The cost: an image root needs /proc and /dev mounted while it is built,
// as Packer's chroot builders do.

const (
	// lastModuleInstallBranch is the last branch installed with `dnf module
	// install nvidia-driver:<stream>`; NVIDIA's guide installs later ones by
	// enabling the stream and installing nvidia-open or cuda-drivers ("All
	// releases beyond driver version 570 will use these packaging
	// conventions", kernel-modules.html).
	lastModuleInstallBranch = 570
	epelRepoPath            = "/etc/yum.repos.d/epel.repo"
)

// dnfFlavor is what differs between the two kernel module flavors in
// NVIDIA's rpm repositories: the stream suffix, the kernel module package
// and the metapackage (kernel-modules.html; NVIDIA/yum-packaging-dkms-nvidia
// README: streams "XXX-dkms" with kmod-nvidia-latest-dkms and "XXX-open"
// with kmod-nvidia-open-dkms).
type dnfFlavor struct {
	streamSuffix string // "-open", "-dkms"
	kmod         string // "kmod-nvidia-open-dkms", "kmod-nvidia-latest-dkms"
	meta         string // "nvidia-open", "cuda-drivers"
}

func dnfFlavorOf(cfg DriverConfig) dnfFlavor {
	if cfg.open() {
		return dnfFlavor{"-open", "kmod-nvidia-open-dkms", "nvidia-open"}
	}
	return dnfFlavor{"-dkms", "kmod-nvidia-latest-dkms", "cuda-drivers"}
}

// dnfPackaging installs the branch from NVIDIA's CUDA repository:
//
//  1. the repository (dnf config-manager --add-repo …/cuda-<distro>.repo);
//  2. on RHEL and rebuilds, EPEL, which carries dkms;
//  3. the kernel headers and development files of the target kernel
//     (kernel-devel-$(uname -r) and kernel-headers-$(uname -r); on Amazon
//     Linux 2023 also kernel-modules-extra, as NVIDIA's and AWS's
//     instructions install), so DKMS can build the module; a transaction
//     of its own, before the stream changes;
//  4. the stream: dnf module enable nvidia-driver:<branch>-open|-dkms on a
//     root without the driver, switch-to (which moves the installed stack
//     with it) otherwise;
//  5. the driver: dnf module install for branches up to 570, dnf install
//     nvidia-open / cuda-drivers after that.
//
// What is installed is judged by the whole stack (driver_dnf_stack.go), not
// one package: the branch counts as installed only when the driver, its
// NVML library, the kernel module of the configured flavor and the
// metapackage are all on it. The stream counts as the pin only when it is
// the configured one and no installed stack contradicts it.
func dnfPackaging(ctx context.Context, h *Host, d Distro, cfg DriverConfig, kernel, goarch string) (driverPackaging, error) {
	arch, err := cudaRepoArch(goarch)
	if err != nil {
		return driverPackaging{}, err
	}
	b := cfg.Branch
	flavor := dnfFlavorOf(cfg)
	stream := b + flavor.streamSuffix
	module := "nvidia-driver:" + stream

	versionlocked := dnfLockedByVersionlock(d)
	if !versionlocked {
		if err := checkDNFVersionlock(h, cfg); err != nil {
			return driverPackaging{}, err
		}
	}
	var current dnfModuleStream
	if !versionlocked {
		var err error
		if current, err = readDNFModuleStream(h); err != nil {
			return driverPackaging{}, err
		}
	}
	stack, err := readRPMDriverStack(ctx, h)
	if err != nil {
		return driverPackaging{}, err
	}

	p := driverPackaging{source: "NVIDIA's CUDA repository", pinFirst: true}
	p.setup = append(p.setup, dnfAddRepo(h, cudaRepoBase(d.CUDARepo, arch)+"cuda-"+d.CUDARepo+".repo",
		"add NVIDIA's CUDA repository for "+d.CUDARepo)...)
	if d.Family == familyRHEL && !h.Exists(epelRepoPath) {
		epel := "epel-release"
		if d.Release.ID == "rhel" {
			// RHEL has no epel-release of its own; EPEL's guide installs
			// the release package from Fedora's servers.
			epel = "https://dl.fedoraproject.org/pub/epel/epel-release-latest-" + d.Release.major() + ".noarch.rpm"
		}
		p.setup = append(p.setup, Change{
			Summary: "add EPEL, which carries dkms for the NVIDIA kernel module packages",
			Ops:     commandOps(Command{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", epel}}),
		})
	}
	kernelPkgs := dnfKernelPackages(d, kernel)
	p.setup = append(p.setup, Change{
		Summary: "install the kernel development packages DKMS builds the NVIDIA module against: " + strings.Join(kernelPkgs, ", "),
		Ops:     commandOps(Command{Root: h.Root, Name: "dnf", Args: append([]string{"-y", "install"}, kernelPkgs...)}),
	})

	if versionlocked {
		// RHEL 10: no streams; dnf's versionlock plugin holds the branch.
		return dnfVersionlockPackaging(h, cfg, flavor, stack, p)
	}

	viaMeta := cfg.branchNumber() > lastModuleInstallBranch
	p.installed = stack.on(b, flavor, viaMeta)
	if p.installed {
		p.installedVersion = stack.driver[0].version
	}
	// The stream pins the branch only when nothing installed contradicts
	// it: a stack of another branch or flavor under the right stream (a
	// `dnf module enable` without a sync, an earlier failure) needs the
	// switch-to that moves it.
	p.pinned = current.enabled() && current.Stream == stream && (stack.empty() || p.installed)
	if stack.empty() && !current.enabled() {
		p.pin = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "enable", module}}}
	} else {
		p.pin = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "switch-to", module, "--allowerasing"}}}
	}

	if !viaMeta {
		p.packages = []string{"@" + module}
		p.install = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "install", module}}}
	} else {
		p.packages = []string{flavor.meta + " (stream " + module + ")"}
		p.install = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", "--allowerasing", flavor.meta}}}
	}
	if stale := stack.staleNVML(cfg.branchNumber()); len(stale) > 0 {
		// switch-to moves the packages the new stream also carries; an
		// NVML package of the other packaging generation is in no stream
		// of the new branch, so it stays behind, a second NVML library
		// beside the branch's. It goes once the branch's own is in.
		p.install = append(p.install, Command{Root: h.Root, Name: "dnf", Args: append([]string{"-y", "remove"}, stale...)})
	}

	// The packaging plans its own changes (driver.go: own), so a running
	// driver of the branch over a stack that is not whole (an NVML
	// library an upgrade took to another branch) is planned back, while a
	// running driver with no package of the stack (a runfile's, an AMI's)
	// is left alone.
	p.own, p.noStack = true, stack.empty()
	switch {
	case !p.installed:
		p.planned = append(append([]Change{}, p.setup...), p.installChange(cfg))
	case !p.pinned:
		p.planned = []Change{p.pinChange(cfg)}
	}
	return p, nil
}

// dnfKernelPackages are the kernel development packages DKMS needs, for the
// target kernel when it is known. Amazon Linux 2023 names the packages of
// its newer kernel series after the series (kernel6.12-devel), as AWS's EKS
// AMI build does.
func dnfKernelPackages(d Distro, kernel string) []string {
	names := []string{"kernel-devel", "kernel-headers"}
	if d.Family == familyAL2023 {
		prefix := "kernel"
		if series := kernelSeries(kernel); series != "" && series != "6.1" {
			prefix = "kernel" + series
		}
		names = []string{prefix + "-devel", prefix + "-headers", prefix + "-modules-extra", prefix + "-modules-extra-common"}
	}
	if kernel == "" {
		return names
	}
	for i := range names {
		names[i] += "-" + kernel
	}
	return names
}

// kernelSeries is "6.12" of "6.12.40-63.114.amzn2023.x86_64".
func kernelSeries(kernel string) string {
	parts := strings.SplitN(kernel, ".", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// dnfAddRepo adds a repository from its .repo file's URL with dnf
// config-manager, which saves the file as /etc/yum.repos.d/<its name>; no
// change when that file exists already (set up earlier, or by hand).
func dnfAddRepo(h *Host, url, summary string) []Change {
	repoFile := "/etc/yum.repos.d/" + path.Base(url)
	if h.Exists(repoFile) {
		return nil
	}
	return []Change{{
		Summary: summary + " (" + repoFile + ")",
		Ops:     commandOps(Command{Root: h.Root, Name: "dnf", Args: []string{"config-manager", "--add-repo", url}}),
	}}
}

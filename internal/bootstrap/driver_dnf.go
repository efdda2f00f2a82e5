package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// This file is the driver's dnf packaging for Amazon Linux 2023 and RHEL 8/9
// (Rocky Linux, AlmaLinux, CentOS Stream), from NVIDIA's CUDA repository.
// NVIDIA publishes each branch there as module streams of the nvidia-driver
// module: <branch>-open for the open kernel modules, <branch>-dkms for the
// proprietary ones. The enabled stream is the pin: dnf only upgrades within
// it.

const (
	// dnfModuleStatePath is where dnf keeps the nvidia-driver module's
	// enabled stream.
	dnfModuleStatePath = "/etc/dnf/modules.d/nvidia-driver.module"
	// lastModuleInstallBranch is the last branch installed with `dnf module
	// install nvidia-driver:<stream>`; NVIDIA's guide installs later ones by
	// enabling the stream and installing nvidia-open or cuda-drivers ("all
	// releases beyond driver version 570 will use these packaging
	// conventions").
	lastModuleInstallBranch = 570
	epelRepoPath            = "/etc/yum.repos.d/epel.repo"
)

// dnfPackaging installs the branch from NVIDIA's CUDA repository:
//
//  1. the repository (dnf config-manager --add-repo …/cuda-<distro>.repo);
//  2. on RHEL and rebuilds, EPEL, which carries dkms;
//  3. the kernel headers and development files of the target kernel
//     (kernel-devel-$(uname -r) and kernel-headers-$(uname -r); on Amazon
//     Linux 2023 also kernel-modules-extra, as NVIDIA's and AWS's
//     instructions install), so DKMS can build the module;
//  4. the stream: dnf module enable nvidia-driver:<branch>-open|-dkms, or
//     switch-to from another stream (NVIDIA's guide switches flavors so);
//  5. the driver: dnf module install for branches up to 570, dnf install
//     nvidia-open / cuda-drivers after that.
func dnfPackaging(ctx context.Context, h *Host, d Distro, cfg DriverConfig, kernel, goarch string) (driverPackaging, error) {
	arch, err := cudaRepoArch(goarch)
	if err != nil {
		return driverPackaging{}, err
	}
	b := cfg.Branch
	stream := b + "-dkms"
	kmod, meta := "kmod-nvidia-latest-dkms", "cuda-drivers"
	if cfg.open() {
		stream = b + "-open"
		kmod, meta = "kmod-nvidia-open-dkms", "nvidia-open"
	}
	module := "nvidia-driver:" + stream

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
			Summary:  "add EPEL, which carries dkms for the NVIDIA kernel module packages",
			Commands: []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", epel}}},
		})
	}

	current, err := readDNFModuleStream(h)
	if err != nil {
		return driverPackaging{}, err
	}
	p.pinned = current.enabled() && current.Stream == stream
	switch {
	case current.enabled() && current.Stream != stream:
		p.pin = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "switch-to", module, "--allowerasing"}}}
	default:
		p.pin = []Command{{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "enable", module}}}
	}

	kernelPkgs := dnfKernelPackages(d, kernel)
	p.install = []Command{{Root: h.Root, Name: "dnf", Args: append([]string{"-y", "install"}, kernelPkgs...)}}
	if cfg.branchNumber() <= lastModuleInstallBranch {
		p.packages = []string{"@" + module}
		p.install = append(p.install, Command{Root: h.Root, Name: "dnf", Args: []string{"-y", "module", "install", module}})
	} else {
		p.packages = []string{meta + " (stream " + module + ")"}
		p.install = append(p.install, Command{Root: h.Root, Name: "dnf", Args: []string{"-y", "install", "--allowerasing", meta}})
	}

	version, err := rpmVersion(ctx, h, kmod)
	if err != nil {
		return driverPackaging{}, err
	}
	if version != "" && branchOf(version) == b {
		p.installed, p.installedVersion = true, version
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

// dnfModuleStream is the nvidia-driver module's state in dnf's modules.d.
type dnfModuleStream struct {
	Stream string // "580-open"
	State  string // "enabled", "disabled", ""
}

func (s dnfModuleStream) enabled() bool { return s.State == "enabled" }

// readDNFModuleStream reads /etc/dnf/modules.d/nvidia-driver.module, the INI
// file dnf writes when a stream is enabled, reset or switched.
func readDNFModuleStream(h *Host) (dnfModuleStream, error) {
	data, exists, err := h.ReadFile(dnfModuleStatePath)
	if err != nil {
		return dnfModuleStream{}, fmt.Errorf("reading %s: %w", dnfModuleStatePath, err)
	}
	var s dnfModuleStream
	if !exists {
		return s, nil
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";") || strings.HasPrefix(text, "[") {
			continue
		}
		key, value, found := strings.Cut(text, "=")
		if !found {
			return dnfModuleStream{}, &ParseError{Path: dnfModuleStatePath, Line: line, Err: fmt.Errorf("%q is not key=value", text)}
		}
		switch strings.TrimSpace(key) {
		case "stream":
			s.Stream = strings.TrimSpace(value)
		case "state":
			s.State = strings.TrimSpace(value)
		}
	}
	return s, scanner.Err()
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
		Summary:  summary + " (" + repoFile + ")",
		Commands: []Command{{Root: h.Root, Name: "dnf", Args: []string{"config-manager", "--add-repo", url}}},
	}}
}

// rpmVersion is the installed version of a package, "" when it is not
// installed. rpm runs on the target (chroot for an image), which is where
// its database is.
func rpmVersion(ctx context.Context, h *Host, pkg string) (string, error) {
	return rpmQuery(ctx, h, pkg, "%{VERSION}")
}

// rpmQuery is `rpm -q --queryformat format pkg`: the installed package's
// tags as format spells them, "" when it is not installed.
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

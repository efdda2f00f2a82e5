package bootstrap

import (
	"fmt"
)

// This file is the driver's apt packaging: Ubuntu's own archive on Ubuntu,
// NVIDIA's CUDA repository on Debian.

// ubuntuDriverPackagePrefixes name the NVIDIA driver packages whose holds
// belong to the driver step: a hold on another branch or flavor is released
// before the configured one replaces it.
var ubuntuDriverPackagePrefixes = []string{"nvidia-headless-", "nvidia-utils-", "nvidia-driver-", "nvidia-open", "cuda-drivers"}

// ubuntuPackaging installs the branch from Ubuntu's archive. It uses the
// "-server" packages (Canonical's Enterprise Ready Drivers, the branches
// NVIDIA supports on data-center GPUs; `ubuntu-drivers --gpgpu` picks them)
// and of those the headless ones (no X or desktop libraries), as NVIDIA's
// own Ansible role (NVIDIA/ansible-role-nvidia-driver) does:
// nvidia-headless-<branch>-server[-open] brings the DKMS kernel module,
// the compute libraries and nvidia-persistenced, nvidia-utils-<branch>-server
// brings nvidia-smi.
//
// The packages are held with apt-mark: when Ubuntu stops maintaining a
// branch it turns its packages into transitional packages that pull in a
// newer branch, and a held package is never upgraded into one. The hold
// also keeps patch releases out; `apt-mark unhold` them to take one.
func ubuntuPackaging(h *Host, cfg DriverConfig, kernel string) (driverPackaging, error) {
	b := cfg.Branch
	main := "nvidia-headless-" + b + "-server"
	if cfg.open() {
		main += "-open"
	}
	utils := "nvidia-utils-" + b + "-server"
	packages := []string{main, utils}

	status, err := readDpkgStatus(h)
	if err != nil {
		return driverPackaging{}, err
	}
	p := driverPackaging{
		source:   "Ubuntu's archive",
		packages: packages,
		prepare:  []Command{aptGetNoninteractive(h, "update")},
		install:  []Command{aptGetNoninteractive(h, append(append([]string{"install", "-y"}, kernelHeadersDeb(kernel)...), packages...)...)},
		pin:      []Command{{Root: h.Root, Name: "apt-mark", Args: append([]string{"hold"}, packages...)}},
	}
	installed := status[main]
	if installed.Installed() {
		if installed.Transitional() || branchOf(installed.Version) != b {
			return driverPackaging{}, fmt.Errorf("%s %s is installed, but it is a transitional package that pulls in another branch: Ubuntu no longer maintains branch %s (check `apt-cache search nvidia-headless-` for the current -server branches) and set driver.branch to one of them", main, installed.Version, b)
		}
		p.installed, p.installedVersion = true, installed.Version
	}
	p.pinned = status[main].Held() && status[utils].Held()
	p.releasePackages = status.heldExcept(ubuntuDriverPackagePrefixes, packages)
	if len(p.releasePackages) > 0 {
		p.release = []Command{{Root: h.Root, Name: "apt-mark", Args: append([]string{"unhold"}, p.releasePackages...)}}
	}
	return p, nil
}

const (
	cudaKeyringPackage = "cuda-keyring_1.1-1_all.deb"
	// cudaKeyringPath is the signing key the cuda-keyring package installs
	// next to its sources.list.d entry; its presence means the repository
	// is set up.
	cudaKeyringPath = "/usr/share/keyrings/cuda-archive-keyring.gpg"
	// firstPinningPackageBranch is the first branch with NVIDIA's
	// nvidia-driver-pinning-<branch> package in the CUDA apt repositories;
	// from 590 on it is the only way to choose a branch, as the packages
	// no longer carry the branch in their names.
	firstPinningPackageBranch = 570
)

// debianCUDAPackaging: see driver_debian_plan.go.

// kernelHeadersDeb is the headers package DKMS builds the module against,
// as NVIDIA's guide installs it (linux-headers-$(uname -r)); none when the
// target kernel is unknown.
func kernelHeadersDeb(kernel string) []string {
	if kernel == "" {
		return nil
	}
	return []string{"linux-headers-" + kernel}
}

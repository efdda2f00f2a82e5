package bootstrap

// This file is the driver's apt packaging: Ubuntu's own archive on Ubuntu,
// NVIDIA's CUDA repository on Debian.

// The Ubuntu packaging is in driver_debian_ubuntu.go.

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

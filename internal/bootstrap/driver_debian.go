package bootstrap

// This file is the driver's apt packaging: Ubuntu's own archive on Ubuntu,
// NVIDIA's CUDA repository on Debian 12 and 13 (debian12, debian13).

// The Ubuntu packaging is in driver_debian_ubuntu.go.

const (
	cudaKeyringPackage = "cuda-keyring_1.1-1_all.deb"
	// cudaKeyringPath is the signing key the cuda-keyring package installs
	// next to its sources.list.d entry; its presence means the repository
	// is set up.
	cudaKeyringPath = "/usr/share/keyrings/cuda-archive-keyring.gpg"
	// firstPinningPackageBranch is the first branch with NVIDIA's
	// nvidia-driver-pinning-<branch> package in the CUDA apt repositories
	// (driver_debian_names.go). On Debian it is the branch lock from there
	// on; Debian's package names never carried the branch (only the
	// cuda-drivers-<branch> and nvidia-open-<branch> metapackages do), so
	// NVIDIA's 590 renaming, which is Ubuntu's, changed nothing here.
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

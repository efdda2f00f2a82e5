// Package nvrepo serves models of NVIDIA's package repositories at NVIDIA's
// own addresses, over HTTPS with a test CA, so gpu-bootstrap's unchanged
// URLs reach them from inside a chroot made by internal/testbed/debroot.
//
// The server (server.go) listens on 127.0.0.1:443 and routes by host name
// and path prefix; Trust points a root's /etc/hosts at it and adds the test
// CA to the root's CA bundles. The apt model (debian_*.go, cuda_debian.go,
// toolkit_debian.go) builds real signed flat repositories: real .deb files
// made with dpkg-deb, Packages indexes, and Release files signed with the
// host's gpg, so apt's own signature and dependency checks run for real.
// Where each package name, version and dependency shape comes from is
// written next to the data in cuda_debian.go and toolkit_debian.go.
//
// The rpm model (rpm_*.go) builds real rpm repositories as NVIDIA's own
// scripts do: packages from rpmbuild signed with rpmsign, createrepo_c
// metadata, the nvidia-driver module's streams added with modifyrepo_c,
// and a signed repomd.xml where the .repo file asks for repo_gpgcheck
// (the rhel10 repository has no streams: NVIDIA locks branches there with
// dnf versionlock); with the distribution side a dnf root needs (release
// package, kernel-devel, dkms, EPEL, on Rocky Linux 10 the versionlock
// plugin's package) for file:// repositories inside the root. Its driver
// releases span the branches NVIDIA publishes in late 2026 (535 past its
// end of life, 580 and 620 long-term, 595 production; 620 open-only).
// Its sources are written in rpm_cuda.go and rpm_toolkit.go; it leaves out
// the precompiled-kmod streams, the ks/fm/src profiles and
// dnf-plugin-nvidia.
//
// What it does not reproduce: the packages' contents (a .deb holds a few
// marker files, no driver, no kernel module, no working maintainer
// scripts), CUDA toolkit packages, i386 packages, the arm64/sbsa
// repositories' full contents, HTTP caching headers or redirects to
// mirrors, and anything of NVIDIA's repositories that no test needs.
package nvrepo

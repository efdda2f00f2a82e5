package bootstrap

import (
	"fmt"
	"os"
	"strings"
)

// Where the driver comes from on Ubuntu (22.04, 24.04, 26.04).
//
// Two vendors package the driver for Ubuntu, and both say not to mix them:
//
//   - Ubuntu's archive: Canonical's "-server" packages (Enterprise Ready
//     Drivers; `ubuntu-drivers install --gpgpu`), branch in every name,
//     also after 590 (packages.ubuntu.com, source
//     nvidia-graphics-drivers-595-server in jammy, noble and resolute:
//     nvidia-headless-595-server[-open], libnvidia-compute-595-server;
//     nvidia-graphics-drivers-615-server, whose nvidia-dkms-615-server is a
//     transitional package to the open one; 590-server became transitional
//     to 595-server in resolute). Kernel modules signed for Secure Boot
//     come with it. This stays the step's default: a node with nothing
//     else configured installs from it and holds the packages with
//     apt-mark (driver_debian_ubuntu.go).
//   - NVIDIA's CUDA repository for the release (ubuntu2204, ubuntu2404,
//     ubuntu2604: "cuda-drivers_615.71.09 is in the ubuntu2604 repo",
//     public GPU-node notes, code corpus find_string
//     "libnvidia-compute nvidia-dkms-open"), which NVIDIA's Driver
//     Installation Guide installs from
//     (driver_ubuntu_names.go [ubuntu]): from branch 590 on its packages
//     carry no branch in their names ("Starting with branch 590, branch
//     designation was removed from Ubuntu package names. Use version
//     locking packages to manage branch and version switching."), so a
//     branch is chosen and kept only by nvidia-driver-pinning-<branch>,
//     installed before the driver.
//
// The step uses NVIDIA's CUDA repository when the node has opted into it:
// an apt source of the node names NVIDIA's repository for this release —
// the network repository as the guide adds it (cuda-keyring, or
// /etc/apt/sources.list.d/cuda-$distro-$arch.list), i.e. a line of
// sources.list or a sources.list.d .list / deb822 .sources file with
// developer.download.nvidia.com/compute/cuda/repos/ubuntu<XXYY>/, or the
// guide's local repository (nvidia-driver-local-repo-ubuntu<XXYY>-<version>,
// the same packages from a file: source). A commented-out line does not
// count. Otherwise it installs from Ubuntu's archive.
//
// Chosen: opting in is the guide's own first step (add the repository),
// not a setting of this tool: once NVIDIA's repository is a source of the
// node, its packages (nvidia-open, cuda-drivers, libnvidia-compute) are
// what a user or a CUDA toolkit install pulls in, and following it keeps
// one vendor's stack. The choice depends on nothing else, so it is the
// same on every run; every plan says it (Host.Note), also when nothing
// changes.
//
//   - To NVIDIA's repository (add cuda-keyring): a move without a mixed
//     stack; the "-server" packages are removed, their holds released, in
//     the transaction that installs the repository's stack under its lock.
//   - NVIDIA's stack installed, but no source of NVIDIA's repository for
//     this release (do-release-upgrade 22.04 → 24.04 leaves ubuntu2204's
//     source, or disables it; the source was removed): a plan error on
//     driver.branch (driver_debian_ubuntu.go). Chosen: replacing NVIDIA's
//     stack with Ubuntu's would also remove what depends on it (cuda,
//     cuda-runtime-*), and no setting says the user wants that; the error
//     names both fixes — add NVIDIA's repository for the release
//     (cuda-keyring), or purge NVIDIA's driver packages to use Ubuntu's
//     archive. Pinning packages left after such a purge are purged by the
//     archive install once it has succeeded (a removed pinning package
//     leaves its preferences file, a conffile, still pinning).
//
// In NVIDIA's repository, the step follows the guide's compute-only
// installation in the branch's naming (driver_ubuntu_names.go):
// libnvidia-compute[-<branch>], nvidia-dkms[-<branch>][-open], and
// nvidia-utils[-<branch>] for nvidia-smi, locked by the branch's pinning
// package (570 on) or the step's own preferences file (older branches),
// installed before them, exactly one lock left (driver_debian_lock.go). A
// move across the rename, 580 → 595 or 595 → 580, is one apt-get install
// under the new lock that installs the branch's names and removes every
// package of the other naming (a branch-named package has no 595 version,
// an unbranched one no 580 version), so the stack is never mixed
// (driver_ubuntu_cuda.go).

// ubuntuCUDARepo is the directory of NVIDIA's CUDA repository for an Ubuntu
// release: "ubuntu2404" for 24.04 ([ubuntu]'s $distro).
func ubuntuCUDARepo(d Distro) string {
	return "ubuntu" + strings.ReplaceAll(d.Release.VersionID, ".", "")
}

// ubuntuSourceFiles are the apt source files a node configures
// repositories in (sources.list(5): sources.list, and sources.list.d's
// ".list" one-line and ".sources" deb822 files), sorted.
func ubuntuSourceFiles(h *Host) []string {
	files := []string{"/etc/apt/sources.list"}
	entries, _ := os.ReadDir(h.Path("/etc/apt/sources.list.d"))
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources")) {
			files = append(files, "/etc/apt/sources.list.d/"+e.Name())
		}
	}
	return files
}

// aptSourceEntries are the enabled entries of an apt source file: its
// one-line entries (sources.list, ".list"), or its deb822 stanzas
// (".sources", blank-line separated) without "Enabled: no"
// (sources.list(5)); commented-out lines do not count.
func aptSourceEntries(file string, data []byte) []string {
	stanzas := strings.Split(string(data), "\n\n")
	if !strings.HasSuffix(file, ".sources") {
		stanzas = strings.Split(string(data), "\n")
	}
	var entries []string
	for _, stanza := range stanzas {
		enabled := true
		var lines []string
		for _, line := range strings.Split(stanza, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if key, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(key), "Enabled") && strings.EqualFold(strings.TrimSpace(value), "no") {
				enabled = false
			}
			lines = append(lines, line)
		}
		if enabled && len(lines) > 0 {
			entries = append(entries, strings.Join(lines, "\n"))
		}
	}
	return entries
}

// ubuntuCUDASource is the file that configures NVIDIA's CUDA repository
// for the release, "" when none does. A commented-out line does not count.
func ubuntuCUDASource(h *Host, d Distro) (string, error) {
	network := "developer.download.nvidia.com/compute/cuda/repos/" + ubuntuCUDARepo(d) + "/"
	local := "nvidia-driver-local-repo-" + ubuntuCUDARepo(d) + "-"
	for _, file := range ubuntuSourceFiles(h) {
		data, exists, err := h.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("reading the apt sources: %w", err)
		}
		if !exists {
			continue
		}
		for _, entry := range aptSourceEntries(file, data) {
			if strings.Contains(entry, network) || strings.Contains(entry, local) {
				return file, nil
			}
		}
	}
	return "", nil
}

// ubuntuSource says whether the step installs from NVIDIA's CUDA
// repository, and why, in the words the plan's note shows.
func ubuntuSource(h *Host, d Distro) (cuda bool, why string, err error) {
	file, err := ubuntuCUDASource(h, d)
	if err != nil || file == "" {
		return false, "", err
	}
	return true, fmt.Sprintf("%s names NVIDIA's CUDA repository for %s", file, ubuntuCUDARepo(d)), nil
}

// ubuntuDriverPackaging picks the source (see above) and plans from it.
func ubuntuDriverPackaging(h *Host, d Distro, cfg DriverConfig, kernel, goarch string) (driverPackaging, error) {
	status, err := readDpkgStatus(h)
	if err != nil {
		return driverPackaging{}, err
	}
	cuda, why, err := ubuntuSource(h, d)
	if err != nil {
		return driverPackaging{}, err
	}
	if !cuda {
		return ubuntuPackaging(h, cfg, kernel, ubuntuCUDARepo(d), status)
	}
	h.Note("installing from NVIDIA's CUDA repository, not Ubuntu's archive: %s", why)
	return ubuntuCUDAPackaging(h, d, cfg, kernel, goarch, status)
}

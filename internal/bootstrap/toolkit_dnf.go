package bootstrap

import "context"

// This file is the toolkit's dnf packaging (Amazon Linux 2023, RHEL 8/9 and
// rebuilds): NVIDIA's libnvidia-container rpm repository.

// toolkitRepoURL is the repository's .repo file. NVIDIA's guide downloads it
// into /etc/yum.repos.d/nvidia-container-toolkit.repo; dnf config-manager
// --add-repo saves it there too, as the driver step adds the CUDA
// repository. It checks the repository metadata's signature
// (repo_gpgcheck) with the key it names, which dnf -y imports.
const toolkitRepoURL = "https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo"

// dnfToolkitPackaging adds the repository unless its .repo file exists,
// and asks rpm for the installed nvidia-container-toolkit.
func dnfToolkitPackaging(ctx context.Context, h *Host) (toolkitPackaging, error) {
	installed, err := installedToolkit(ctx, h, toolkitPackage)
	if err != nil {
		return toolkitPackaging{}, err
	}
	p := toolkitPackaging{
		source:    "NVIDIA's libnvidia-container rpm repository",
		installed: installed,
		setup:     dnfAddRepo(h, toolkitRepoURL, "add NVIDIA's libnvidia-container rpm repository"),
	}
	p.install = func(specs []string, mode toolkitInstallMode) []Command {
		// dnf install of an exact version moves an installed package to
		// it, down as well as up; reinstall puts the same files back.
		verb := "install"
		if mode == toolkitReinstall {
			verb = "reinstall"
		}
		return []Command{{Root: h.Root, Name: "dnf", Args: append([]string{"-y", verb}, specs...)}}
	}
	return p, nil
}

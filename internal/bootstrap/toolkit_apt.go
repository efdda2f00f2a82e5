package bootstrap

import "context"

// This file is the toolkit's apt packaging (Ubuntu, Debian): NVIDIA's
// libnvidia-container apt repository, signed by its own keyring.

const (
	// toolkitKeyringPath is the keyring the repository's sources entry
	// trusts (signed-by), as NVIDIA's guide names it.
	toolkitKeyringPath = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
	// toolkitAptListPath is the sources entry of the repository.
	toolkitAptListPath = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
	// toolkitKeyDownload is where the armored key is downloaded to before
	// gpg converts it into the keyring.
	toolkitKeyDownload = "/tmp/nvidia-container-toolkit.gpgkey"
)

// toolkitAptList is the sources entry NVIDIA's guide writes: NVIDIA's
// stable/deb/nvidia-container-toolkit.list with signed-by added to each
// line (the experimental one stays commented out). It is the same for every
// release and architecture: apt fills in $(ARCH).
const toolkitAptList = "deb [signed-by=" + toolkitKeyringPath + "] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n" +
	"#deb [signed-by=" + toolkitKeyringPath + "] https://nvidia.github.io/libnvidia-container/experimental/deb/$(ARCH) /\n"

// aptToolkitPackaging adds the repository as NVIDIA's guide does, without
// its shell pipes: the prerequisites (ca-certificates, curl, gnupg2), the
// key downloaded to a file and dearmored into the keyring, and the sources
// entry written as a file. A keyring or sources entry already there (from
// an earlier run, or written by hand from the guide, perhaps with the
// experimental line enabled) is left as it is.
func aptToolkitPackaging(ctx context.Context, h *Host) (toolkitPackaging, error) {
	installed, err := installedToolkit(ctx, h, toolkitPackage)
	if err != nil {
		return toolkitPackaging{}, err
	}
	p := toolkitPackaging{source: "NVIDIA's libnvidia-container apt repository", installed: installed}
	if !h.Exists(toolkitKeyringPath) {
		p.setup = append(p.setup, Change{
			Summary: "add the signing key of NVIDIA's libnvidia-container apt repository (" + toolkitKeyringPath + ")",
			Ops: commandOps(
				aptGetNoninteractive(h, "update"),
				aptGetNoninteractive(h, "install", "-y", "--no-install-recommends", "ca-certificates", "curl", "gnupg2"),
				Command{Root: h.Root, Name: "curl", Args: []string{"-fsSL", "-o", toolkitKeyDownload, toolkitGPGKeyURL}},
				// --batch --yes: no terminal to ask on, and a keyring
				// left half-written by a failed run is replaced.
				Command{Root: h.Root, Name: "gpg", Args: []string{"--batch", "--yes", "--dearmor", "-o", toolkitKeyringPath, toolkitKeyDownload}},
			),
		})
	}
	if !h.Exists(toolkitAptListPath) {
		p.setup = append(p.setup, Change{
			Summary: "add NVIDIA's libnvidia-container apt repository (" + toolkitAptListPath + ")",
			Ops:     []Op{FileOp{File: &FileChange{Path: toolkitAptListPath, New: []byte(toolkitAptList), Mode: 0o644}}},
		})
	}
	p.install = func(specs []string, mode toolkitInstallMode) []Command {
		args := []string{"install", "-y"}
		switch mode {
		case toolkitReplace:
			// apt-get -y refuses to install an older version than the
			// one installed unless told it may.
			args = append(args, "--allow-downgrades")
		case toolkitReinstall:
			args = append(args, "--reinstall")
		}
		return []Command{
			aptGetNoninteractive(h, "update"),
			aptGetNoninteractive(h, append(args, specs...)...),
		}
	}
	return p, nil
}

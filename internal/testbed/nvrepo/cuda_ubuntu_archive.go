package nvrepo

import (
	"fmt"
	"strings"
	"testing"
)

// A small model of Ubuntu's own archive's "-server" driver packages, so a
// test can move a node between Ubuntu's archive and NVIDIA's CUDA
// repository (cuda_ubuntu.go) with real apt. It is not NVIDIA's: it stands
// in for the one part of Ubuntu's archive the driver step installs, served
// as a flat repository at UbuntuArchiveModelAddress (a test host, not
// Ubuntu's).
//
// Sources ([archive] of cuda_ubuntu.go, packages.ubuntu.com, source
// nvidia-graphics-drivers-<b>-server): the binary packages
// nvidia-headless-<b>-server[-open], nvidia-dkms-<b>-server[-open],
// libnvidia-compute-<b>-server, nvidia-utils-<b>-server,
// nvidia-kernel-common-<b>-server; versions "<upstream>-0ubuntu0.24.04.<n>"
// (nvidia-headless-580-server 580.95.05-0ubuntu0.24.04.2 and the like);
// nvidia-headless-<b> Depends "nvidia-dkms-<b>, nvidia-headless-no-dkms-<b>".
//
// Chosen: the headless metapackage depends on the DKMS and compute
// packages directly (no -no-dkms middle package), "(= V)"; the DKMS and
// nvidia-utils packages Provide and Conflict with the same virtual
// packages as the CUDA model's (one kernel module, one nvidia-smi), so a
// mixed stack of them cannot be installed; the flat layout.

// UbuntuArchiveModelAddress is where BuildUbuntuArchiveModel's repository
// is served.
const UbuntuArchiveModelAddress = "ubuntu-archive.nvrepo.test/server-drivers/"

// BuildUbuntuArchiveModel builds the "-server" packages of each version
// ("580.95.05-0ubuntu0.24.04.2"), signed with the process's model key.
func BuildUbuntuArchiveModel(t testing.TB, versions ...string) *DebianRepo {
	t.Helper()
	var pkgs []DebPackage
	for _, v := range versions {
		upstream, _, _ := strings.Cut(v, "-")
		b, _, ok := strings.Cut(upstream, ".")
		if !ok {
			t.Fatal(fmt.Errorf("nvrepo: %q is not a driver version", v))
		}
		srv := "-" + b + "-server"
		pkg := func(name, depends string) DebPackage {
			return DebPackage{Name: name, Version: v, Arch: "amd64", Source: "nvidia-graphics-drivers" + srv, Depends: depends,
				Files: map[string][]byte{"/usr/share/doc/" + name + "/model-version": []byte(v + "\n")}}
		}
		eq := func(n string) string { return n + " (= " + v + ")" }
		utils := withFiles(pkg("nvidia-utils"+srv, eq("libnvidia-compute"+srv)), "/usr/bin/nvidia-smi", nvidiaSMIScript)
		utils.Provides, utils.Conflicts, utils.Replaces = "nvidia-utils-any", "nvidia-utils-any", "nvidia-utils-any"
		pkgs = append(pkgs, pkg("nvidia-kernel-common"+srv, ""), pkg("libnvidia-compute"+srv, eq("nvidia-kernel-common"+srv)), utils)
		for _, flavor := range []string{"", "-open"} {
			dkms := pkg("nvidia-dkms"+srv+flavor, "dkms, "+eq("nvidia-kernel-common"+srv))
			dkms.Provides, dkms.Conflicts = "nvidia-dkms-kernel", "nvidia-dkms-kernel"
			pkgs = append(pkgs, dkms, pkg("nvidia-headless"+srv+flavor, eq("nvidia-dkms"+srv+flavor)+", "+eq("libnvidia-compute"+srv)))
		}
	}
	pkgs = append(pkgs, cudaDKMS())
	return newDebianRepo(t, UbuntuArchiveModelAddress, ".", "Ubuntu", "Ubuntu", nil, pkgs)
}

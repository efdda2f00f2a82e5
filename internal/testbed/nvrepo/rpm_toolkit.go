package nvrepo

import (
	"strings"
	"testing"
)

// The model of the NVIDIA Container Toolkit's rpm repository,
// https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch.
//
// Sources:
//   - The .repo file NVIDIA's install guide downloads
//     (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html:
//     `curl -s -L https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo`):
//     repositories nvidia-container-toolkit (enabled) and
//     nvidia-container-toolkit-experimental (disabled), repo_gpgcheck=1,
//     gpgcheck=0, gpgkey …/libnvidia-container/gpgkey, sslcacert
//     /etc/pki/tls/certs/ca-bundle.crt — the repository metadata is
//     signed (repodata/repomd.xml.asc), the packages' signatures are not
//     checked.
//   - Dependencies, the same shapes as the apt model (toolkit_debian.go):
//     nvidia-container-toolkit requires nvidia-container-toolkit-base at
//     its own version-release and libnvidia-container-tools "< 2.0.0"
//     (NVIDIA/nvidia-container-toolkit packaging/rpm/SPECS/nvidia-container-toolkit.spec:
//     "Requires: libnvidia-container-tools >= …, libnvidia-container-tools
//     < 2.0.0"); libnvidia-container-tools requires libnvidia-container1
//     at least its version.
//
// Chosen: x86_64 only; the packages hold marker files, no nvidia-ctk (the
// runtime's binary is a marker so the toolkit step sees it installed).

// DefaultToolkitRPMVersions are the toolkit releases of the model, as the
// apt model's.
var DefaultToolkitRPMVersions = DefaultToolkitVersions

// toolkitRPMRepoFile is stable/rpm/nvidia-container-toolkit.repo.
const toolkitRPMRepoFile = `[nvidia-container-toolkit]
name=nvidia-container-toolkit
baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch
repo_gpgcheck=1
gpgcheck=0
enabled=1
gpgkey=https://nvidia.github.io/libnvidia-container/gpgkey
sslverify=1
sslcacert=/etc/pki/tls/certs/ca-bundle.crt

[nvidia-container-toolkit-experimental]
name=nvidia-container-toolkit-experimental
baseurl=https://nvidia.github.io/libnvidia-container/experimental/rpm/$basearch
repo_gpgcheck=1
gpgcheck=0
enabled=0
gpgkey=https://nvidia.github.io/libnvidia-container/gpgkey
sslverify=1
sslcacert=/etc/pki/tls/certs/ca-bundle.crt
`

// ToolkitRPMAddress is where BuildToolkitRPM's Dir is mounted.
const ToolkitRPMAddress = "nvidia.github.io/libnvidia-container/"

// BuildToolkitRPM returns a fresh copy of the model of libnvidia-container's
// stable/rpm repository at versions ("1.17.8-1"; DefaultToolkitRPMVersions
// when nil). Dir holds gpgkey, stable/rpm/nvidia-container-toolkit.repo and
// stable/rpm/x86_64/; mount it at ToolkitRPMAddress.
func BuildToolkitRPM(t testing.TB, versions []string) *RPMRepo {
	t.Helper()
	if versions == nil {
		versions = DefaultToolkitRPMVersions
	}
	var pkgs []RPMPackage
	for _, v := range versions {
		pkgs = append(pkgs, ToolkitRPMPackages(v)...)
	}
	return cachedRPMRepo(t, rpmLayout{
		name: "toolkit-rpm", pkgDir: "stable/rpm/x86_64", keyFile: "gpgkey", signRepomd: true,
		extra: map[string]string{"stable/rpm/nvidia-container-toolkit.repo": toolkitRPMRepoFile},
	}, pkgs)
}

// ToolkitRPMPackages is one toolkit release's four packages; v is
// version-release, "1.17.8-1".
func ToolkitRPMPackages(v string) []RPMPackage {
	version, release, _ := strings.Cut(v, "-")
	if release == "" {
		release = "1"
	}
	pkg := func(name string, requires ...string) RPMPackage {
		return RPMPackage{Name: name, Version: version, Release: release, Arch: "x86_64", Requires: requires,
			Files: map[string]string{"/usr/share/doc/" + name + "/model-version": v}}
	}
	vr := version + "-" + release
	base := pkg("nvidia-container-toolkit-base")
	// The runtime the toolkit step checks for (toolkit.go,
	// toolkitRuntimeBinary), a marker here.
	base.Files["/usr/bin/nvidia-container-runtime"] = "model " + v
	return []RPMPackage{
		pkg("libnvidia-container1"),
		pkg("libnvidia-container-tools", "libnvidia-container1 >= "+vr),
		base,
		pkg("nvidia-container-toolkit", "nvidia-container-toolkit-base = "+vr, "libnvidia-container-tools >= "+vr, "libnvidia-container-tools < 2.0.0"),
	}
}

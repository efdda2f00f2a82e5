package nvrepo

import (
	"fmt"
	"testing"
)

// The model of the NVIDIA Container Toolkit's apt repository,
// https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) (apt
// replaces $(ARCH) in a flat repository's path, sources.list(5)).
//
// Sources:
//   [install] NVIDIA Container Toolkit install guide, apt:
//             https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html :
//             `curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --dearmor
//             -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg`, then
//             https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list
//             with "deb https://" rewritten to "deb [signed-by=...] https://".
//   [control] NVIDIA/nvidia-container-toolkit packaging/debian/control (HEAD,
//             d34b3046): nvidia-container-toolkit "Depends: nvidia-container-toolkit-base
//             (= @VERSION@), libnvidia-container-tools (= @VERSION@),
//             libnvidia-container-tools (<< 2.0.0)"; nvidia-container-toolkit-base has
//             no package dependencies. apt's own report of 1.19.0-1 agrees:
//             "nvidia-container-toolkit : Depends: nvidia-container-toolkit-base (= 1.19.0-1)
//             ... Depends: libnvidia-container-tools (= 1.19.0-1)".
//   [libnvc]  NVIDIA/libnvidia-container pkg/deb/control: libnvidia-container-tools
//             "Depends: ${shlibs:Depends}", which dpkg-shlibdeps turns into
//             "libnvidia-container1 (>= <version>)" from the symbols file
//             (pkg/deb/libnvidia-container@MAJOR@.symbols, updated each release).
//             Modeled as "libnvidia-container1 (>= V)".
//
// Chosen: Release "Origin: NVIDIA", "Label: libnvidia-container"; the
// packages hold marker files, no nvidia-ctk.

// DefaultToolkitVersions are the toolkit releases of the model.
var DefaultToolkitVersions = []string{"1.17.8-1", "1.18.0-1", "1.18.1-1"}

// toolkitListFile is stable/deb/nvidia-container-toolkit.list [install].
const toolkitListFile = "deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n" +
	"#deb https://nvidia.github.io/libnvidia-container/experimental/deb/$(ARCH) /\n"

// BuildToolkitDebian builds the model of libnvidia-container's stable/deb
// repository for amd64 at the given versions (DefaultToolkitVersions if
// nil). Dir holds gpgkey, stable/deb/nvidia-container-toolkit.list and the
// flat repository stable/deb/amd64/; mount it with s.Mount(r.Address(), r.Dir()).
func BuildToolkitDebian(t testing.TB, versions []string) *DebianRepo {
	t.Helper()
	if versions == nil {
		versions = DefaultToolkitVersions
	}
	key, err := processKey()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []DebPackage
	for _, v := range versions {
		pkgs = append(pkgs, ToolkitDebianPackages("amd64", v)...)
	}
	r := newDebianRepo(t, "nvidia.github.io/libnvidia-container/", "stable/deb/amd64", "NVIDIA", "libnvidia-container", key, pkgs)
	if err := writeFiles(r.dir, map[string][]byte{
		"gpgkey": key.ArmoredPublicKey(),
		"stable/deb/nvidia-container-toolkit.list": []byte(toolkitListFile),
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// ToolkitDebianPackages is one toolkit release's four packages [control], [libnvc].
func ToolkitDebianPackages(debArch, v string) []DebPackage {
	doc := func(name string) map[string][]byte {
		return map[string][]byte{"/usr/share/doc/" + name + "/model-version": []byte(v + "\n")}
	}
	return []DebPackage{
		{Name: "libnvidia-container1", Version: v, Arch: debArch, Source: "libnvidia-container", Files: doc("libnvidia-container1")},
		{Name: "libnvidia-container-tools", Version: v, Arch: debArch, Source: "libnvidia-container",
			Depends: fmt.Sprintf("libnvidia-container1 (>= %s)", v), Files: doc("libnvidia-container-tools")},
		{Name: "nvidia-container-toolkit-base", Version: v, Arch: debArch, Source: "nvidia-container-toolkit",
			Breaks:   "nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook, nvidia-container-toolkit (<= 1.10.0-1)",
			Replaces: "nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook", Files: doc("nvidia-container-toolkit-base")},
		{Name: "nvidia-container-toolkit", Version: v, Arch: debArch, Source: "nvidia-container-toolkit",
			Depends: fmt.Sprintf("nvidia-container-toolkit-base (= %s), libnvidia-container-tools (= %s), libnvidia-container-tools (<< 2.0.0)", v, v),
			Breaks:  "nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook", Replaces: "nvidia-container-runtime (<= 3.5.0-1), nvidia-container-runtime-hook",
			Files: doc("nvidia-container-toolkit")},
	}
}

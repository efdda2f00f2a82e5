package bootstrap

import (
	"fmt"
	"strings"
)

// k3s and RKE2 run a containerd of their own, with a config under their
// data directory that they generate at every start, and do not read
// /etc/containerd/config.toml. This file finds such an embedded containerd
// when runtime.config_path is not set (runtime.engine auto or containerd),
// and says which systemd unit runs it; runtime_containerd_k3s.go edits its
// template.
//
// Paths and units, from the projects' install scripts and sources:
//
//   - k3s: get.k3s.io installs /usr/local/bin/k3s and writes
//     /etc/systemd/system/k3s.service (server) or k3s-agent.service (agent);
//     pkg/agent/containerd writes the config to
//     /var/lib/rancher/k3s/agent/etc/containerd/config.toml (only when it
//     runs its embedded containerd, not with --container-runtime-endpoint).
//   - RKE2: the tarball (get.rke2.io's default) extracts to /usr/local
//     (bin/rke2, lib/systemd/system/rke2-server.service and
//     rke2-agent.service, both always), the RPM to /usr (bin/rke2,
//     lib/systemd/system); the runtime binaries (containerd, runc) sit in
//     /var/lib/rancher/rke2/bin, the config in
//     /var/lib/rancher/rke2/agent/etc/containerd/config.toml. Both units
//     ship, so the one enabled (`systemctl enable rke2-server`, a link in
//     /etc/systemd/system/multi-user.target.wants) says which runs.
type embeddedContainerd struct {
	program  string   // k3s, rke2: the word in the generated file's header
	binaries []string // files whose presence shows it is installed
	config   string   // the containerd config it generates
	server   string   // its systemd units: a server node runs server,
	agent    string   // an agent node agent
}

var embeddedContainerds = []embeddedContainerd{
	{
		program:  "k3s",
		binaries: []string{"/usr/local/bin/k3s", "/usr/bin/k3s"},
		config:   "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
		server:   "k3s",
		agent:    "k3s-agent",
	},
	{
		program:  "rke2",
		binaries: []string{"/usr/local/bin/rke2", "/usr/bin/rke2", "/var/lib/rancher/rke2/bin"},
		config:   "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
		server:   "rke2-server",
		agent:    "rke2-agent",
	},
}

// embeddedContainerdConfigs are the generated configs, for detection.
func embeddedContainerdConfigs() []string {
	var paths []string
	for _, e := range embeddedContainerds {
		paths = append(paths, e.config)
	}
	return paths
}

// embeddedProgram is the entry for a program named in a generated
// header; nil for one this table does not know.
func embeddedProgram(program string) *embeddedContainerd {
	for i := range embeddedContainerds {
		if embeddedContainerds[i].program == program {
			return &embeddedContainerds[i]
		}
	}
	return nil
}

func (e *embeddedContainerd) unitEnabled(h *Host, unit string) bool {
	return unitState(h, unit+".service").enabled
}

func (e *embeddedContainerd) unitInstalled(h *Host, unit string) bool {
	return unitState(h, unit+".service").path != ""
}

// units are the systemd units that may run this containerd, the one that
// most likely does first: the enabled one, else the only one installed,
// else the server's (what k3s and RKE2 install by default).
func (e *embeddedContainerd) units(h *Host) []string {
	switch {
	case e.unitEnabled(h, e.agent) && !e.unitEnabled(h, e.server),
		!e.unitEnabled(h, e.server) && e.unitInstalled(h, e.agent) && !e.unitInstalled(h, e.server):
		return []string{e.agent, e.server}
	}
	return []string{e.server, e.agent}
}

// installed is the first of its binaries found under the root, "" when
// none is.
func (e *embeddedContainerd) installed(h *Host) string {
	for _, p := range e.binaries {
		if h.Exists(p) {
			return p
		}
	}
	return ""
}

// containerdMainConfig is the containerd config runtime.config_path means
// when it is not set: an embedded containerd's generated config when k3s
// or RKE2 is installed and has generated one, else
// /etc/containerd/config.toml. found says what showed an embedded one, for
// the plan; "" for the usual file. A node with an embedded containerd and
// a system containerd that serves CRI as well, or with k3s or RKE2
// installed but no config generated and no system containerd, is an error
// that asks for runtime.config_path.
func containerdMainConfig(h *Host) (path, found string, err error) {
	var embedded []string
	var notGenerated []string
	for i := range embeddedContainerds {
		e := &embeddedContainerds[i]
		bin := e.installed(h)
		switch {
		case bin != "" && h.Exists(e.config):
			embedded = append(embedded, e.config)
			found = fmt.Sprintf("%s's embedded containerd (%s, and the config it generates, %s)", e.program, bin, e.config)
		case h.Exists(e.config):
			embedded = append(embedded, e.config)
			found = fmt.Sprintf("the containerd config %s generates (%s)", e.program, e.config)
		case bin != "":
			notGenerated = append(notGenerated, fmt.Sprintf("%s (%s)", e.program, bin))
		}
	}
	system := systemContainerd(h)
	switch {
	case len(embedded) == 1 && system == "":
		return embedded[0], found, nil
	case len(embedded) > 1 || len(embedded) == 1 && system != "":
		all := embedded
		if system != "" {
			all = append(all, defaultContainerdConfig+" ("+system+")")
		}
		return "", "", fieldError("runtime.config_path", "more than one containerd under %s: %s; set runtime.config_path to the config of the one that runs the GPU containers", rootName(h), strings.Join(all, ", "))
	case len(notGenerated) > 0 && system == "":
		return "", "", fieldError("runtime.config_path", "%s is installed under %s but has not generated its containerd config yet (it writes it at its first start); start it once and run again, or set runtime.config_path to /var/lib/rancher/<k3s|rke2>/agent/etc/containerd/config.toml once it exists",
			strings.Join(notGenerated, ", "), rootName(h))
	}
	return defaultContainerdConfig, "", nil
}

// systemContainerd is what shows a containerd installed as a package that
// serves CRI (its binary or /etc/containerd/config.toml), "" when there is
// none or it is Docker's backend with the CRI plugin disabled.
func systemContainerd(h *Host) string {
	if containerdDisablesCRI(h) {
		return ""
	}
	for _, p := range []string{"/usr/bin/containerd", "/usr/local/bin/containerd", defaultContainerdConfig} {
		if h.Exists(p) {
			return p
		}
	}
	return ""
}

// containerdRunsEmbedded reports whether a generated containerd config
// (k3s, RKE2) is under the root, so containerd counts as installed even
// with no containerd binary on the usual paths.
func containerdRunsEmbedded(h *Host) bool {
	for _, p := range embeddedContainerdConfigs() {
		if h.Exists(p) {
			return true
		}
	}
	return false
}

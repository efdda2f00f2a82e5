package bootstrap

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// NVIDIA Container Toolkit 1.18 and later ship nvidia-cdi-refresh, which
// keeps a CDI spec of the GPUs itself. From the toolkit's source
// (NVIDIA/nvidia-container-toolkit at tags v1.18.0, v1.19.1 and v1.20.0:
// deployments/systemd, packaging/debian/nvidia-container-toolkit-base.install,
// .postinst, .maintscript and rules, packaging/rpm/SPECS/nvidia-container-toolkit.spec):
//
//   - nvidia-cdi-refresh.service (Type=oneshot) runs `nvidia-ctk cdi
//     generate` with NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml,
//     which /etc/nvidia-container-toolkit/nvidia-cdi-refresh.env may
//     override; WantedBy=multi-user.target, so enabled it runs at boot. It
//     can run and write nothing: ConditionPathExists wants nvidia-smi and
//     nvidia-ctk, ExecCondition skips it unless /lib/modules/%v/modules.dep
//     lists nvidia.ko (or /dev/dxg exists), and `nvidia-ctk cdi generate`
//     can fail; hence refreshOutputProblem.
//   - nvidia-cdi-refresh.path (also WantedBy=multi-user.target) starts it
//     when /lib/modules/%v/modules.dep(.bin) or /usr/bin/nvidia-ctk change
//     (a driver or toolkit install or upgrade); PathChanged does not fire
//     at boot for files that were already there, so with only the path unit
//     enabled nothing writes the spec at boot.
//   - The units are in nvidia-container-toolkit-base: in /etc/systemd/system
//     through 1.19.x, in /lib/systemd/system on Debian and Ubuntu from
//     1.20.0 (whose maintscript rm_conffile's the /etc copies), the systemd
//     unit directory (%{_unitdir}) on RPM systems from 1.20.0.
//   - Who enables them: from 1.20.0 debhelper (rules: dh --with systemd)
//     and RPM's %systemd_post with the package's
//     90-nvidia-container-toolkit.preset enable both units. In 1.18 and 1.19
//     the Debian postinst and the RPM %post run `systemctl enable --now` for
//     both only when `systemctl is-system-running` says running or
//     degraded, so an image built in a chroot gets them installed but not
//     enabled.
//   - Not verified at a tag (the stored source has no v1.20.1 tag): NVIDIA's
//     main after v1.20.0 (commit d34b304) adds udev's
//     99-nvidia-cdi-refresh.rules, which starts the service when the nvidia
//     module loads. A nvidia-cdi-refresh.service.d/10-container-engines.conf
//     drop-in ordering it Before= the container engines, said to come with
//     v1.20.1, is in neither; nothing here depends on it.
//
// CDI itself (tags.cncf.io/container-device-interface v1.1.0 pkg/cdi,
// spec-dirs.go and cache.go refresh) reads /etc/cdi, then /var/run/cdi; a
// spec from a later directory has the higher priority, so for a device name
// both define the one in /var/run/cdi wins, and two specs in the same
// directory that define one name are a conflict that drops the device
// altogether ("conflicting device"). gpu-bootstrap's spec
// (/etc/cdi/nvidia.yaml) and the refreshed one (/var/run/cdi/nvidia.yaml)
// both define nvidia.com/gpu=0, =GPU-<uuid> and =all.
//
// The rule (chosen: one owner, so that the two never fight over a file or a
// name, and the toolkit's spec, which follows driver upgrades and module
// loads by itself, is the one kept where the operator installed it; and
// never no spec at all):
//
//   - nvidia-cdi-refresh.service is installed under the root, enabled (a
//     multi-user.target.wants link for the service itself, so it runs at
//     boot) and not masked, and its output exists and is a spec of
//     nvidia.com/gpu: it owns the devices. The cdi step writes no spec and
//     says so (Host.Note); a spec at cdi.spec_path from an earlier run is
//     removed (with a backup), since it would define the same names a second
//     time. cdi.spec_path naming the refresh's own output is left to it. The
//     .path unit's enablement or mask does not decide: masked alone, the
//     enabled service still writes at boot; enabled alone, nothing writes at
//     boot.
//   - Enabled, but its output missing or not a spec of nvidia.com/gpu: the
//     step keeps (or writes) its own spec and warns (Host.Warn) with the
//     command to look at the service. That is safe: once the refresh writes
//     /var/run/cdi/nvidia.yaml, it wins over /etc/cdi, and the next plan
//     steps aside.
//   - Otherwise gpu-bootstrap owns them and writes its spec as before; a
//     spec the refresh left would still be loaded — from /var/run/cdi it
//     wins until the next reboot empties /var/run (a tmpfs), from elsewhere
//     (an env-file output in /etc) it stays until removed — which the plan
//     warns about.
//   - The refresh's output (the env file's) in the same directory as
//     cdi.spec_path, but another file: a plan error for cdi.spec_path while
//     that file exists or the refresh runs at boot and will write it, unless
//     the refresh owns the devices and the step removes its own spec — two
//     specs of one directory that define one device name drop it.
//
// The toolkit container's NRI plugin (nvidia-ctk-installer
// --enable-nri-plugin, v1.19.0 and later, as the GPU operator runs it)
// injects CDI devices named in pod annotations of the nvidia.cdi.k8s.io
// domain through containerd's or CRI-O's NRI; it resolves them from the same
// spec directories, so the one-owner rule covers it too.
//
// To make gpu-bootstrap the owner instead: systemctl disable --now
// nvidia-cdi-refresh.path nvidia-cdi-refresh.service (or mask the service).
// Without a spec file on disk at all, the nvidia runtime's default mode
// (jit-cdi, see toolkit_mode.go) still makes its own spec for the devices a
// container asks for through NVIDIA_VISIBLE_DEVICES; the file serves CDI
// requests the engine resolves (--device nvidia.com/gpu=all, the device
// plugin's CDI strategies).
const (
	cdiRefreshService = "nvidia-cdi-refresh.service"
	cdiRefreshPath    = "nvidia-cdi-refresh.path"
	cdiRefreshEnvFile = "/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env"
	// cdiRefreshOutput is the service's NVIDIA_CTK_CDI_OUTPUT_FILE_PATH.
	cdiRefreshOutput = "/var/run/cdi/nvidia.yaml"
)

// cdiRefresh is what the root has of nvidia-cdi-refresh.
type cdiRefresh struct {
	unit    string // the service's unit file; "" when not installed or masked
	enabled bool   // a multi-user.target.wants link for the service: it runs at boot
	// pathEnabled is a wants link for the .path unit: the service runs when
	// the driver or the toolkit changes, but not at boot (PathChanged does
	// not fire for a file that was there before).
	pathEnabled bool
	masked      string // the service masked (linked to /dev/null); "" when not
	output      string // the spec it writes
}

// owns reports whether the refresh runs at boot and so keeps the spec of
// the GPUs once it has written one (refreshOutputProblem says whether it
// has). The service decides, not the .path unit: with only the path unit
// masked the enabled service still writes at boot, and with the service
// masked the path unit cannot start it.
func (r cdiRefresh) owns() bool { return r.unit != "" && r.enabled && r.masked == "" }

// notRunningAtBoot says why an installed refresh does not own the devices;
// "" when it is not installed, or runs at boot.
func (r cdiRefresh) notRunningAtBoot() string {
	switch {
	case r.masked != "":
		return "nvidia-cdi-refresh is masked (" + r.masked + ")"
	case r.unit == "" || r.owns():
		return ""
	case r.pathEnabled:
		return "nvidia-cdi-refresh (" + r.unit + ") is enabled only through " + cdiRefreshPath + ", which starts it when the driver or the toolkit changes, not at boot"
	}
	return "nvidia-cdi-refresh (" + r.unit + ") is not enabled"
}

// readCDIRefresh finds nvidia-cdi-refresh's units under the root.
func readCDIRefresh(h *Host) cdiRefresh {
	service, pathUnit := unitState(h, cdiRefreshService), unitState(h, cdiRefreshPath)
	r := cdiRefresh{
		output:      cdiRefreshOutput,
		unit:        service.path,
		masked:      service.masked,
		enabled:     service.enabled,
		pathEnabled: pathUnit.enabled && pathUnit.masked == "",
	}
	if data, ok, _ := h.ReadFile(cdiRefreshEnvFile); ok {
		if out := envFileValue(data, "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH"); path.IsAbs(out) {
			r.output = path.Clean(out)
		}
	}
	return r
}

// refreshOutputProblem is "" when the refresh's output is a spec of the
// nvidia.com/gpu devices, else what is wrong with it ("does not exist").
// The service can be enabled and write nothing: its ExecCondition skips it
// when modules.dep lists no nvidia.ko, its conditions when nvidia-smi is
// missing, `nvidia-ctk cdi generate` can fail, and an image built in a
// chroot has never run it.
func refreshOutputProblem(h *Host, output string) string {
	data, exists, err := h.ReadFile(output)
	if rest, under := strings.CutPrefix(path.Clean(output), "/var/run/"); under && err == nil && !exists {
		// /var/run is a link to /run, which a root may hold as a directory.
		data, exists, err = h.ReadFile("/run/" + rest)
	}
	switch {
	case err != nil:
		return "cannot be read (" + err.Error() + ")"
	case !exists:
		return "does not exist"
	}
	spec, err := decodeCDISpec(output, data)
	if err != nil {
		return "is not a CDI spec (" + err.Error() + ")"
	}
	if spec.Kind != cdiKind {
		return "is a spec of " + spec.Kind + ", not of " + cdiKind
	}
	return ""
}

// envFileValue is the last assignment of key in a systemd EnvironmentFile
// (KEY=value lines, # comments, optional quotes); "" when none.
func envFileValue(data []byte, key string) string {
	value := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		value = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return value
}

// sameSpecFile reports whether two spec paths are one file: /var/run is a
// link to /run on every systemd distribution.
func sameSpecFile(a, b string) bool {
	norm := func(p string) string {
		p = path.Clean(p)
		if rest, ok := strings.CutPrefix(p, "/var/run/"); ok {
			return "/run/" + rest
		}
		return p
	}
	return norm(a) == norm(b)
}

package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// dockerd reads its settings from daemon.json and from its command line,
// and refuses to start when both set the same one (moby daemon/config
// getConflictFreeConfiguration: "the following directives are specified
// both as a flag and in the configuration file"). The flag
// --default-runtime is the file's "default-runtime", and --add-runtime is a
// named option called "runtimes", so a unit that starts dockerd with
// either makes the runtime step's daemon.json keep Docker from starting.
// The plan reads dockerd's command line from its systemd unit (the
// package's, then /etc's, then the drop-ins' ExecStart, an empty one
// resetting the list, as systemd.service(5) says) and refuses such a pair
// by name. An EnvironmentFile's variables are not expanded.
var (
	dockerUnits      = []string{"/usr/lib/systemd/system/docker.service", "/lib/systemd/system/docker.service", "/etc/systemd/system/docker.service"}
	dockerUnitDropIn = []string{"/usr/lib/systemd/system/docker.service.d/*.conf", "/etc/systemd/system/docker.service.d/*.conf", "/run/systemd/system/docker.service.d/*.conf"}
	// dockerFlagKeys are dockerd flags and the daemon.json key each
	// conflicts with, for the keys the runtime step writes.
	dockerFlagKeys = map[string]string{"--default-runtime": "default-runtime", "--add-runtime": "runtimes"}
)

// dockerdCommandLine is the ExecStart systemd would run dockerd with, and
// the unit file that sets it; "" when no unit is found.
func dockerdCommandLine(h *Host) (line, file string, err error) {
	var files []string
	for _, u := range dockerUnits {
		if h.Exists(u) {
			files = []string{u} // a unit in /etc replaces the package's
		}
	}
	for _, pattern := range dockerUnitDropIn {
		matches, err := globInRoot(h, pattern)
		if err != nil {
			return "", "", err
		}
		files = append(files, matches...)
	}
	for _, f := range files {
		data, _, err := h.ReadFile(f)
		if err != nil {
			return "", "", fmt.Errorf("reading %s: %w", f, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		var cont string
		for sc.Scan() {
			text := strings.TrimSpace(sc.Text())
			if strings.HasSuffix(text, "\\") {
				cont += strings.TrimSuffix(text, "\\") + " "
				continue
			}
			text, cont = cont+text, ""
			if v, ok := strings.CutPrefix(text, "ExecStart="); ok {
				line, file = strings.TrimSpace(v), f
			}
		}
	}
	return line, file, nil
}

// checkDockerFlags refuses a daemon.json that sets a key dockerd's command
// line also sets (see dockerUnits).
func checkDockerFlags(h *Host, path string, doc *jsonDoc) error {
	line, unit, err := dockerdCommandLine(h)
	if err != nil || line == "" {
		return err
	}
	args := strings.Fields(line)
	for i, arg := range args {
		flag, value, hasValue := strings.Cut(arg, "=")
		key, ok := dockerFlagKeys[flag]
		if !ok || doc.get(key) == nil {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return fmt.Errorf("%s starts dockerd with %s %s, and %s would set %q as well: dockerd refuses to start when a setting comes from both (\"specified both as a flag and in the configuration file\"). Remove %s from ExecStart (in a drop-in such as %s: an empty ExecStart= line, then the command without it) and run the plan again",
			unit, flag, value, path, key, flag, filepath.Join("/etc/systemd/system/docker.service.d", "gpu.conf"))
	}
	return nil
}

package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// This file reads the nvidia-persistenced systemd unit under Host.Root and
// decides whether it needs gpu-bootstrap's drop-in.
//
// nvidia-persistenced enables persistence mode on every GPU when it starts,
// unless it is given --no-persistence-mode, which "force[s] persistence mode
// off for all devices on startup" (its option table). Ubuntu's packages start
// it exactly so (ExecStart=/usr/bin/nvidia-persistenced --user
// nvidia-persistenced --no-persistence-mode --verbose, a static unit that a
// udev rule starts when the nvidia driver binds), so on Ubuntu the daemon
// would undo the persistence step at every boot. NVIDIA's Ansible role
// overrides ExecStart with a drop-in for the same reason; this step writes a
// drop-in that keeps the packaged command line and swaps the flag for
// --persistence-mode. The units of NVIDIA's RPM packages (and the sample in
// NVIDIA/nvidia-persistenced) have no such flag and get no drop-in.

const (
	persistencedUnit = "nvidia-persistenced.service"
	// persistenceDropInPath sorts after systemctl edit's override.conf and
	// the usual NN-name.conf drop-ins, so its ExecStart is the one that
	// counts.
	persistenceDropInPath = "/etc/systemd/system/nvidia-persistenced.service.d/zz-gpu-bootstrap-persistence-mode.conf"
)

// systemUnitDirs is systemd's unit search path for system units, highest
// precedence first (systemd.unit(5)).
var systemUnitDirs = []string{
	"/etc/systemd/system",
	"/run/systemd/system",
	"/usr/local/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/lib/systemd/system",
}

// persistencedService is the unit as systemd would load it.
type persistencedService struct {
	UnitPath  string   // the unit file in effect
	ExecStart []string // effective ExecStart lines, our drop-in excluded
	// ExecStartFrom names the file that set the last ExecStart line.
	ExecStartFrom string
	DropInOld     []byte // our drop-in's current content; nil when absent
}

// readPersistencedService finds the unit and its drop-ins; nil when no unit
// file exists under the root.
func readPersistencedService(h *Host) (*persistencedService, error) {
	var svc persistencedService
	for _, dir := range systemUnitDirs {
		p := path.Join(dir, persistencedUnit)
		if h.Exists(p) {
			svc.UnitPath = p
			break
		}
	}
	if svc.UnitPath == "" {
		return nil, nil
	}
	lines, err := readUnitExecStart(h, svc.UnitPath)
	if err != nil {
		return nil, err
	}
	svc.ExecStart = applyExecStart(nil, lines)
	if len(lines) > 0 {
		svc.ExecStartFrom = svc.UnitPath
	}

	ours := path.Base(persistenceDropInPath)
	for _, dropIn := range persistencedDropIns(h) {
		lines, err := readUnitExecStart(h, dropIn)
		if err != nil {
			return nil, err
		}
		if path.Base(dropIn) == ours {
			continue
		}
		if len(lines) > 0 {
			svc.ExecStart = applyExecStart(svc.ExecStart, lines)
			svc.ExecStartFrom = dropIn
		}
	}
	old, exists, err := h.ReadFile(persistenceDropInPath)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", persistenceDropInPath, err)
	}
	if exists {
		svc.DropInOld = old
	}
	return &svc, nil
}

// persistencedDropIns are the unit's *.conf drop-ins in the order systemd
// applies them: by file name, a name in a higher-precedence directory
// hiding the same name in a lower one.
func persistencedDropIns(h *Host) []string {
	byName := map[string]string{}
	for i := len(systemUnitDirs) - 1; i >= 0; i-- {
		dir := path.Join(systemUnitDirs[i], persistencedUnit+".d")
		entries, err := os.ReadDir(h.Path(dir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
				byName[e.Name()] = path.Join(dir, e.Name())
			}
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	paths := make([]string, len(names))
	for i, name := range names {
		paths[i] = byName[name]
	}
	return paths
}

// readUnitExecStart returns the ExecStart= values of a unit file's
// [Service] section, in order ("" for a reset), joining lines continued with
// a trailing backslash (systemd.syntax(7)).
func readUnitExecStart(h *Host, file string) ([]string, error) {
	data, _, err := h.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	var values []string
	section := ""
	scanner := bufio.NewScanner(bytes.NewReader(data))
	line, pending := 0, ""
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if pending == "" && (text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";")) {
			continue
		}
		if strings.HasSuffix(text, "\\") {
			pending += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		text, pending = pending+text, ""
		if strings.HasPrefix(text, "[") {
			if !strings.HasSuffix(text, "]") {
				return nil, &ParseError{Path: file, Line: line, Err: fmt.Errorf("section header %q is not closed", text)}
			}
			section = strings.Trim(text, "[]")
			continue
		}
		key, value, found := strings.Cut(text, "=")
		if !found {
			return nil, &ParseError{Path: file, Line: line, Err: fmt.Errorf("%q is not Key=Value", text)}
		}
		if section == "Service" && strings.TrimSpace(key) == "ExecStart" {
			values = append(values, strings.TrimSpace(value))
		}
	}
	return values, scanner.Err()
}

// applyExecStart adds a file's ExecStart values to the list so far: an
// empty value resets it (systemd.service(5)).
func applyExecStart(list, values []string) []string {
	for _, v := range values {
		if v == "" {
			list = nil
			continue
		}
		list = append(list, v)
	}
	return list
}

// disablesPersistence reports whether an ExecStart command line passes
// --no-persistence-mode.
func disablesPersistence(execStart []string) bool {
	for _, line := range execStart {
		for _, word := range strings.Fields(line) {
			if word == "--no-persistence-mode" {
				return true
			}
		}
	}
	return false
}

// persistenceDropIn is the drop-in that restarts the packaged command line
// with --persistence-mode instead of --no-persistence-mode.
func persistenceDropIn(svc *persistencedService) []byte {
	var b strings.Builder
	b.WriteString("# Written by gpu-bootstrap (persistence step). The packaged unit (" + svc.ExecStartFrom + ")\n")
	b.WriteString("# starts nvidia-persistenced with --no-persistence-mode, which turns\n")
	b.WriteString("# persistence mode off on every GPU whenever the daemon starts. This keeps\n")
	b.WriteString("# the packaged command line and turns persistence mode on instead.\n")
	b.WriteString("[Service]\nExecStart=\n")
	for _, line := range svc.ExecStart {
		words := strings.Fields(line)
		for i, w := range words {
			if w == "--no-persistence-mode" {
				words[i] = "--persistence-mode"
			}
		}
		b.WriteString("ExecStart=" + strings.Join(words, " ") + "\n")
	}
	return []byte(b.String())
}

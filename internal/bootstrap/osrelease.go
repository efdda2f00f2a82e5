package bootstrap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// This file reads os-release(5) under Host.Root and decides which family of
// package commands installs the NVIDIA driver there. It reads only; the
// driver step (driver.go) acts on the answer.

// OSRelease is the part of os-release(5) the bootstrap uses.
type OSRelease struct {
	ID         string   // "ubuntu", "debian", "amzn", "rhel", "rocky", "almalinux", "centos"
	IDLike     []string // ID_LIKE, split on spaces: ["rhel", "centos", "fedora"]
	VersionID  string   // "24.04", "12", "2023", "9.4"
	PrettyName string   // "Ubuntu 24.04.1 LTS"
	Path       string   // the file it was read from, "/etc/os-release"
}

// Name is how messages call the system: PRETTY_NAME, or ID and VERSION_ID.
func (r OSRelease) Name() string {
	if r.PrettyName != "" {
		return r.PrettyName
	}
	return strings.TrimSpace(r.ID + " " + r.VersionID)
}

// major is VERSION_ID up to the first dot: "9" of "9.4", "24" of "24.04".
func (r OSRelease) major() string {
	major, _, _ := strings.Cut(r.VersionID, ".")
	return major
}

// osReleasePaths are read in order, as os-release(5) says: /etc/os-release
// takes precedence, /usr/lib/os-release is the fallback.
var osReleasePaths = []string{"/etc/os-release", "/usr/lib/os-release"}

// readOSRelease reads the target's os-release.
func readOSRelease(h *Host) (OSRelease, error) {
	for _, path := range osReleasePaths {
		data, exists, err := h.ReadFile(path)
		if err != nil {
			return OSRelease{}, fmt.Errorf("reading %s: %w", path, err)
		}
		if exists {
			return parseOSRelease(path, data)
		}
	}
	return OSRelease{}, fmt.Errorf("neither /etc/os-release nor /usr/lib/os-release exists under %s, so the distribution (and the package manager for the driver) is unknown", rootName(h))
}

// parseOSRelease parses os-release(5): KEY=VALUE lines, values optionally in
// double or single quotes with backslash escapes, "#" comments and blank
// lines. Unknown keys are ignored; a quote left open is a *ParseError.
func parseOSRelease(path string, data []byte) (OSRelease, error) {
	rel := OSRelease{Path: path}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, raw, found := strings.Cut(text, "=")
		if !found {
			// os-release(5) has no such line; systemd skips it, so do we.
			continue
		}
		value, err := unquoteOSReleaseValue(raw)
		if err != nil {
			return OSRelease{}, &ParseError{Path: path, Line: line, Err: fmt.Errorf("%s: %w", key, err)}
		}
		switch key {
		case "ID":
			rel.ID = value
		case "ID_LIKE":
			rel.IDLike = strings.Fields(value)
		case "VERSION_ID":
			rel.VersionID = value
		case "PRETTY_NAME":
			rel.PrettyName = value
		}
	}
	if err := scanner.Err(); err != nil {
		return OSRelease{}, fmt.Errorf("reading %s: %w", path, err)
	}
	if rel.ID == "" {
		// os-release(5): "If not set, a default of "ID=linux" may be used."
		rel.ID = "linux"
	}
	return rel, nil
}

// unquoteOSReleaseValue undoes the shell-style quoting os-release(5) allows.
func unquoteOSReleaseValue(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	quote := raw[0]
	if quote != '"' && quote != '\'' {
		return raw, nil
	}
	var b strings.Builder
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == quote:
			if rest := strings.TrimSpace(raw[i+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return "", fmt.Errorf("text after the closing quote: %q", rest)
			}
			return b.String(), nil
		case c == '\\' && quote == '"' && i+1 < len(raw):
			i++
			b.WriteByte(raw[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("the quote is not closed")
}

// Driver families: which package manager and which NVIDIA packaging installs
// the driver.
const (
	// familyDebian is Ubuntu (the NVIDIA packages of Ubuntu's own archive)
	// and Debian (NVIDIA's CUDA apt repository).
	familyDebian = "debian"
	// familyAL2023 is Amazon Linux 2023 with NVIDIA's CUDA repository and
	// its nvidia-driver module streams.
	familyAL2023 = "amzn2023"
	// familyRHEL is RHEL 8/9/10 and its rebuilds with NVIDIA's CUDA
	// repository: on 8 and 9 its nvidia-driver module streams hold the
	// branch, on 10 dnf's versionlock plugin (driver_dnf_versionlock.go).
	familyRHEL = "rhel"
)

// supportedSystems is said in every "not supported" error.
const supportedSystems = "Ubuntu 22.04, 24.04 and 26.04; Debian 12 and 13; Amazon Linux 2023; RHEL, Rocky Linux, AlmaLinux and CentOS Stream 8, 9 and 10"

// Distro is a supported system and where NVIDIA's repository keeps its
// packages.
type Distro struct {
	Release OSRelease
	Family  string // familyDebian, familyAL2023, familyRHEL
	// CUDARepo is the directory of NVIDIA's CUDA repository for this
	// release: "debian12", "debian13", "amzn2023", "rhel9", "rhel10" (""
	// for Ubuntu, whose driver comes from Ubuntu's own archive unless an apt
	// source names NVIDIA's repository: ubuntuCUDARepo finds its directory
	// then).
	CUDARepo string
}

// UnsupportedOSError is a system the driver step has no package commands
// for.
type UnsupportedOSError struct {
	Release OSRelease
	Reason  string
}

func (e *UnsupportedOSError) Error() string {
	msg := fmt.Sprintf("%s (ID=%s VERSION_ID=%s in %s) is not supported", e.Release.Name(), e.Release.ID, e.Release.VersionID, e.Release.Path)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg + ". Supported: " + supportedSystems + "."
}

// classifyOS maps an os-release to a driver family.
//
// Fedora is left out on purpose: it is a 13-month desktop distribution, and
// NVIDIA packages its driver without the per-branch module streams this step
// pins RHEL with. RHEL 10 and its rebuilds are in: NVIDIA publishes a
// CUDA repository for them ("rhel10") without module streams, and its
// Driver Installation Guide holds their branch with dnf versionlock
// (kernel-modules.html, "Red Hat Enterprise Linux 10 / AlmaLinux 10 /
// Rocky Linux 10 / Oracle Linux 10": `dnf versionlock \*nvidia\*580\*`,
// `dnf install nvidia-open`), which the driver step writes and moves
// itself (driver_dnf_versionlock.go).
func classifyOS(rel OSRelease) (Distro, error) {
	d := Distro{Release: rel}
	unsupported := func(reason string) (Distro, error) {
		return Distro{}, &UnsupportedOSError{Release: rel, Reason: reason}
	}
	switch rel.ID {
	case "ubuntu":
		switch rel.VersionID {
		case "22.04", "24.04", "26.04":
			d.Family = familyDebian
			return d, nil
		}
		return unsupported("only Ubuntu LTS releases with standard support are")
	case "debian":
		// NVIDIA's Driver Installation Guide, "Linux System Requirements"
		// (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html):
		// "Debian 12 | debian12 | amd64" and "Debian 13 | debian13 | amd64",
		// the codename being the CUDA repository's directory.
		switch rel.major() {
		case "12", "13":
			d.Family, d.CUDARepo = familyDebian, "debian"+rel.major()
			return d, nil
		}
		return unsupported("only Debian 12 (bookworm) and Debian 13 (trixie) are")
	case "amzn":
		switch rel.VersionID {
		case "2023":
			d.Family, d.CUDARepo = familyAL2023, "amzn2023"
			return d, nil
		case "2":
			return unsupported("Amazon Linux 2 reached its end of support on 2026-06-30 (SUPPORT_END in its os-release); build GPU nodes on Amazon Linux 2023")
		}
		return unsupported("")
	case "rhel", "rocky", "almalinux", "centos":
		switch rel.major() {
		case "8", "9", "10":
			d.Family, d.CUDARepo = familyRHEL, "rhel"+rel.major()
			return d, nil
		}
		return unsupported("")
	case "fedora":
		return unsupported("Fedora is a 13-month desktop distribution and NVIDIA packages its driver without per-branch module streams; use RHEL, Rocky Linux or AlmaLinux for GPU nodes")
	}
	return unsupported("")
}

// readDistro reads and classifies the target's os-release.
func readDistro(h *Host) (Distro, error) {
	rel, err := readOSRelease(h)
	if err != nil {
		return Distro{}, err
	}
	return classifyOS(rel)
}

// rootName is Host.Root as messages show it.
func rootName(h *Host) string {
	if h.Root == "" {
		return "/"
	}
	return h.Root
}

package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// dpkgStatusPath is dpkg's database of installed packages: what is
// installed, at which version, and what is on hold (dpkg-query(1) reads the
// same file). Reading it needs no dpkg binary, so it works on any --root.
const dpkgStatusPath = "/var/lib/dpkg/status"

// dpkgPackage is one package's entry in the dpkg status file.
type dpkgPackage struct {
	Name    string
	Want    string // "install", "hold", "deinstall", "purge"
	State   string // "installed", "config-files", "not-installed", …
	Version string
	Summary string // the first line of Description
}

// Installed reports whether the package is unpacked and configured.
func (p dpkgPackage) Installed() bool { return p.State == "installed" }

// Held reports whether apt-mark hold (or dpkg --set-selections) holds it.
func (p dpkgPackage) Held() bool { return p.Want == "hold" }

// Transitional reports whether the package only pulls in another one, as
// Ubuntu turns the packages of a branch it stopped maintaining into
// "(transitional package)" pointing at a newer branch.
func (p dpkgPackage) Transitional() bool {
	return strings.Contains(strings.ToLower(p.Summary), "transitional package")
}

// dpkgStatus is the dpkg database by package name.
type dpkgStatus map[string]dpkgPackage

// readDpkgStatus reads the dpkg database under the root; a root without one
// (a fresh image, a test) has no packages.
func readDpkgStatus(h *Host) (dpkgStatus, error) {
	data, exists, err := h.ReadFile(dpkgStatusPath)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dpkgStatusPath, err)
	}
	if !exists {
		return dpkgStatus{}, nil
	}
	return parseDpkgStatus(data)
}

// parseDpkgStatus parses the deb822 stanzas of the status file.
func parseDpkgStatus(data []byte) (dpkgStatus, error) {
	status := dpkgStatus{}
	var cur dpkgPackage
	curLine := 0
	flush := func() error {
		if cur.Name != "" {
			if _, seen := status[cur.Name]; !seen { // the first architecture wins
				status[cur.Name] = cur
			}
		} else if cur != (dpkgPackage{}) {
			return &ParseError{Path: dpkgStatusPath, Line: curLine, Err: fmt.Errorf("a stanza without a Package field")}
		}
		cur = dpkgPackage{}
		return nil
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	line := 0
	for scanner.Scan() {
		line++
		text := scanner.Text()
		if strings.TrimSpace(text) == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if text[0] == ' ' || text[0] == '\t' {
			continue // a continuation line of a multi-line field
		}
		if cur == (dpkgPackage{}) {
			curLine = line
		}
		key, value, found := strings.Cut(text, ":")
		if !found {
			return nil, &ParseError{Path: dpkgStatusPath, Line: line, Err: fmt.Errorf("%q is not a field", text)}
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Package":
			cur.Name = value
		case "Status":
			fields := strings.Fields(value)
			if len(fields) != 3 {
				return nil, &ParseError{Path: dpkgStatusPath, Line: line, Err: fmt.Errorf("the Status field %q is not \"want flag state\"", value)}
			}
			cur.Want, cur.State = fields[0], fields[2]
		case "Version":
			cur.Version = value
		case "Description":
			cur.Summary = value
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", dpkgStatusPath, err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return status, nil
}

// heldExcept lists the held packages whose names start with one of the
// prefixes and that are not in keep, sorted.
func (s dpkgStatus) heldExcept(prefixes []string, keep []string) []string {
	var held []string
	for name, p := range s {
		if !p.Held() || slices.Contains(keep, name) {
			continue
		}
		for _, prefix := range prefixes {
			if strings.HasPrefix(name, prefix) {
				held = append(held, name)
				break
			}
		}
	}
	sort.Strings(held)
	return held
}

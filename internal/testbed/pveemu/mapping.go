package pveemu

import (
	"crypto/sha1" //nolint:gosec // PVE's config digest is SHA-1
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Cluster PCI mappings as pve-guest-common's PVE/Mapping/PCI.pm keeps
// them (a SectionConfig file, mapping/pci.cfg) and pve-manager's
// PVE/API2/Cluster/Mapping/PCI.pm serves them.

// The patterns of PVE/Mapping/PCI.pm's $map_fmt. $PCI_RE is a Perl
// double-quoted string, so its "\." is a plain "." (any character), as
// the pattern in apidata shows.
var (
	mapIDPattern   = regexp.MustCompile(`^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}$`)
	mapPathPattern = regexp.MustCompile(`^(?:(?:[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:.[a-f0-9])?;)*[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:.[a-f0-9])?)$`)
	configIDRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]+$`)
	nodeNameRE     = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	integerRE      = regexp.MustCompile(`^[+-]?\d+$`)
)

// formatErr is a PVE::Exception "format error\n" with per-path errors,
// stringified as PVE::Exception::stringify does ("path: msg\n" each).
type formatErr map[string]string

func (f formatErr) Error() string {
	var b strings.Builder
	b.WriteString("format error\n")
	for _, k := range slices.Sorted(maps.Keys(f)) {
		b.WriteString(k + ": " + f[k] + "\n")
	}
	return b.String()
}

// parseMapEntry is PVE::JSONSchema::parse_property_string with
// PVE::Mapping::PCI's $map_fmt; path prefixes the keys of a format error
// ("map[0]" in parameter verification).
func parseMapEntry(value, path string) (mappingEntry, error) {
	var e mappingEntry
	res := map[string]string{}
	for _, part := range strings.Split(value, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, hasEq := strings.Cut(part, "=")
		switch {
		case hasEq && k != "" && v != "":
			if _, dup := res[k]; dup {
				return e, die("duplicate key in comma-separated list property: %s\n", k)
			}
			if !slices.Contains([]string{"node", "id", "subsystem-id", "path", "iommugroup", "description"}, k) {
				return e, die("invalid key in comma-separated list property: %s\n", k)
			}
			res[k] = v
		case !hasEq:
			return e, die("value without key, but schema does not define a default key\n")
		default:
			return e, die("missing key in comma-separated list property\n")
		}
	}
	errs := formatErr{}
	key := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for _, k := range []string{"node", "id", "path"} {
		if res[k] == "" {
			errs[key(k)] = "property is missing and it is not optional"
		}
	}
	if v := res["node"]; v != "" && !nodeNameRE.MatchString(v) {
		errs[key("node")] = "invalid format - value does not look like a valid node name\n"
	}
	for _, k := range []string{"id", "subsystem-id"} {
		if v := res[k]; v != "" && !mapIDPattern.MatchString(v) {
			errs[key(k)] = "value does not match the regex pattern"
		}
	}
	if v := res["path"]; v != "" && !mapPathPattern.MatchString(v) {
		errs[key("path")] = "value does not match the regex pattern"
	}
	if v := res["iommugroup"]; v != "" && !integerRE.MatchString(v) {
		errs[key("iommugroup")] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
	}
	if len(res["description"]) > 4096 {
		errs[key("description")] = "value may only be 4096 characters long"
	}
	if len(errs) > 0 {
		return e, errs
	}
	return mappingEntry{Node: res["node"], Path: res["path"], ID: res["id"], SubsystemID: res["subsystem-id"],
		IOMMUGroup: res["iommugroup"], Description: res["description"]}, nil
}

// function is the PCI function with that ID on the node, nil if none.
func (n *hostNode) function(id string) *pciFunction {
	for i := range n.PCI {
		if n.PCI[i].ID == id {
			return &n.PCI[i]
		}
	}
	return nil
}

// pciFunctionSuffix is assert_valid's test for a path naming a function.
var pciFunctionSuffix = regexp.MustCompile(`\.[a-fA-F0-9]`)

// assertValid is PVE::Mapping::PCI::assert_valid: each path of the entry
// against the node's hardware (PVE::SysFSTools::pci_device_info with
// verbose): id, iommugroup (first path only), subsystem-id, and with the
// mapping given, mdev. "" when it holds; else the message PVE dies with
// (without its "\n").
func assertValid(name string, e mappingEntry, m *mapping, node *hostNode) string {
	for idx, path := range strings.Split(e.Path, ";") {
		if !pciFunctionSuffix.MatchString(path) {
			path += ".0" // whole device: the first function must exist
		}
		info := node.function(path)
		if info == nil {
			return fmt.Sprintf("pci device '%s' not found", path)
		}
		type prop struct{ expected, configured *string }
		str := func(s string) *string {
			if s == "" {
				return nil
			}
			return &s
		}
		group := strconv.Itoa(info.IOMMUGroup)
		props := map[string]prop{
			"id":           {str(strings.TrimPrefix(info.Vendor, "0x") + ":" + strings.TrimPrefix(info.Device, "0x")), str(e.ID)},
			"iommugroup":   {&group, str(e.IOMMUGroup)},
			"subsystem-id": {nil, str(e.SubsystemID)},
		}
		if info.SubsystemVendor != "" && info.SubsystemDevice != "" {
			p := props["subsystem-id"]
			p.expected = str(strings.TrimPrefix(info.SubsystemVendor, "0x") + ":" + strings.TrimPrefix(info.SubsystemDevice, "0x"))
			props["subsystem-id"] = p
		}
		if m != nil {
			hw, conf := "0", "0"
			if len(info.Mdev) > 0 {
				hw = "1"
			}
			if m.mdev() {
				conf = "1"
			}
			props["mdev"] = prop{&hw, &conf}
		}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			p := props[k]
			if k == "iommugroup" && idx > 0 {
				continue
			}
			switch {
			case p.expected == nil && p.configured == nil:
				continue
			case p.expected != nil && p.configured == nil:
				return fmt.Sprintf("missing expected property '%s' for device '%s'", k, path)
			case p.expected == nil:
				return fmt.Sprintf("unexpected property '%s' configured for device '%s'", k, path)
			}
			exp := strings.ReplaceAll(*p.expected, "0x", "")
			conf := strings.ReplaceAll(*p.configured, "0x", "")
			if exp != conf {
				return fmt.Sprintf("'%s' does not match for '%s' (%s != %s)", k, name, exp, conf)
			}
		}
	}
	return ""
}

// mappingFile is mapping/pci.cfg as PVE::SectionConfig::write_config
// writes it: the section header "<id>", the required map lines, the
// optional keys sorted, a blank line after each section.
func (s *state) mappingFile() string {
	var b strings.Builder
	for _, m := range s.mappings {
		b.WriteString(m.ID + "\n")
		for _, line := range m.Map {
			b.WriteString("\tmap " + line + "\n")
		}
		for _, k := range slices.Sorted(maps.Keys(m.Opts)) {
			if m.Opts[k] != "" {
				b.WriteString("\t" + k + " " + m.Opts[k] + "\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mappingDigest is the file's digest (SectionConfig::parse_config: the
// SHA-1 of its text), the same for every mapping in it.
func (s *state) mappingDigest() string {
	sum := sha1.Sum([]byte(s.mappingFile())) //nolint:gosec // PVE's config digest is SHA-1
	return hex.EncodeToString(sum[:])
}

// mappingJSON is a section as parse_config returns it (type "pci", the
// booleans as numbers) with its id and the file's digest (mappingDigest,
// read once per request by the caller).
func mappingJSON(m *mapping, digest string) map[string]any {
	out := map[string]any{"id": m.ID, "type": "pci", "map": slices.Clone(m.Map), "digest": digest}
	for k, v := range m.Opts {
		if k == "description" {
			out[k] = v
		} else {
			n, _ := strconv.Atoi(v)
			out[k] = n
		}
	}
	return out
}

// listMappings is GET /cluster/mapping/pci: the mappings the caller may
// modify, use or audit; check-node adds the diagnostics
// (API2/Cluster/Mapping/PCI.pm 'index'): "No mapping for node X." when
// none of the map lines is for it, "Invalid configuration: ..." for each
// of its lines that fails assert_valid.
func (e *Emulator) listMappings(r *request) (any, error) {
	checkNode, check := r.param("check-node")
	e.mu.Lock()
	defer e.mu.Unlock()
	if check {
		if !nodeNameRE.MatchString(checkNode) {
			return nil, paramErr(map[string]string{"check-node": "invalid format - value does not look like a valid node name\n"})
		}
		// proxied to that node
		if err := e.st.checkNode(checkNode); err != nil {
			return nil, err
		}
	}
	out := []map[string]any{}
	digest := e.st.mappingDigest()
	for i := range e.st.mappings {
		m := &e.st.mappings[i]
		if r.auth.check("/mapping/pci/"+m.ID, true, "Mapping.Modify", "Mapping.Use", "Mapping.Audit") != nil {
			continue
		}
		entry := mappingJSON(m, digest)
		if check {
			checks := []map[string]any{}
			entries := m.onNode(checkNode)
			if len(entries) == 0 {
				checks = append(checks, map[string]any{"severity": "warning", "message": "No mapping for node " + checkNode + "."})
			}
			for _, me := range entries {
				if msg := assertValid(m.ID, me, m, e.st.node(checkNode)); msg != "" {
					checks = append(checks, map[string]any{"severity": "error", "message": "Invalid configuration: " + msg + "\n"})
				}
			}
			entry["checks"] = checks
		}
		out = append(out, entry)
	}
	return out, nil
}

// getMapping is GET /cluster/mapping/pci/{id}: the section and the file's
// digest; "mapping 'x' not found" for an unknown one.
func (e *Emulator) getMapping(r *request) (any, error) {
	id := r.vars["id"]
	// pve-manager's rest_handler checks permissions before the handler
	// verifies the parameters.
	if err := r.auth.check("/mapping/pci/"+id, true, "Mapping.Use", "Mapping.Modify", "Mapping.Audit"); err != nil {
		return nil, err
	}
	if perr := verifyParams(r.params, map[string]string{"id": ""}); perr != nil {
		return nil, perr
	}
	if perr := verifyConfigID("id", id); perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.st.mapping(id)
	if m == nil {
		return nil, errf("mapping '%s' not found", id)
	}
	return mappingJSON(m, e.st.mappingDigest()), nil
}

// verifyConfigID is the pve-configid format (PVE::JSONSchema::pve_verify_configid).
func verifyConfigID(param, id string) *apiError {
	if !configIDRE.MatchString(id) {
		return paramErr(map[string]string{param: fmt.Sprintf("invalid format - invalid configuration ID '%s'\n", id)})
	}
	return nil
}

// dieErr is a Perl `die "...\n"`: the message as PVE words it, its
// newline included.
type dieErr string

func (d dieErr) Error() string { return string(d) }

func die(format string, args ...any) error { return dieErr(fmt.Sprintf(format, args...)) }

package pveemu

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Writes to the cluster PCI mappings, as pve-manager's
// PVE/API2/Cluster/Mapping/PCI.pm ('create', 'update', 'delete') does
// them: the permission first (rest_handler), then the parameters
// (createSchema/updateSchema of PVE::Mapping::PCI), then the work under
// the file lock, whose errors carry lock_pci_config's prefix.

// mappingParams are the parameters of POST and PUT, by name: the schema
// type; "map" is an array of $map_fmt strings.
var mappingParams = map[string]string{
	"id": "string", "description": "string", "mdev": "boolean", "live-migration-capable": "boolean", "map": "array",
}

// mappingOptions are PVE::Mapping::PCI->options(): map is required.
var mappingOptions = []string{"description", "live-migration-capable", "map", "mdev"}

// verifyParams is PVE::JSONSchema's check of the parameters against a
// schema of name -> type: unknown names, booleans (only 0 and 1 pass
// JSONSchema's check_type), integers.
func verifyParams(params map[string]string, schema map[string]string) *apiError {
	if errs := paramErrors(params, schema); len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

// paramErrors are verifyParams' errors by parameter.
func paramErrors(params map[string]string, schema map[string]string) map[string]string {
	errs := map[string]string{}
	for k, v := range params {
		t, ok := schema[k]
		switch {
		case !ok:
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		case t == "boolean" && v != "0" && v != "1":
			errs[k] = fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
		case t == "integer" && !integerRE.MatchString(v):
			errs[k] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
	}
	return errs
}

// mapLines is the "map" parameter as a list: repeated form keys (joined
// by "\x00" when read), a JSON array, or one string (RESTHandler's
// $normalize_legacy_param_formats makes a scalar a one-element array).
func mapLines(v string) []string {
	if strings.HasPrefix(v, "[") {
		var lines []string
		if json.Unmarshal([]byte(v), &lines) == nil {
			return lines
		}
	}
	return strings.Split(v, "\x00")
}

// verifyMappingParams checks what createSchema/updateSchema check beyond
// the types: id's format, the lengths, each map line's format.
func verifyMappingParams(r *request, create bool) *apiError {
	schema := mappingParams
	if !create {
		schema = map[string]string{"delete": "string", "digest": "string"}
		for k, v := range mappingParams {
			schema[k] = v
		}
	}
	errs := paramErrors(r.params, schema)
	id, ok := r.params["id"]
	if !create {
		id, ok = r.vars["id"], true
	}
	switch {
	case !ok:
		errs["id"] = "property is missing and it is not optional"
	case !configIDRE.MatchString(id):
		errs["id"] = fmt.Sprintf("invalid format - invalid configuration ID '%s'\n", id)
	}
	if len(r.params["description"]) > 4096 {
		errs["description"] = "value may only be 4096 characters long"
	}
	if v, set := r.params["map"]; set {
		for i, line := range mapLines(v) {
			path := fmt.Sprintf("map[%d]", i)
			if _, err := parseMapEntry(line, path); err != nil {
				errs[path] = "invalid format - " + err.Error()
			}
		}
	} else if create {
		errs["map"] = "property is missing and it is not optional"
	}
	if v := r.params["delete"]; v != "" {
		if len(v) > 4096 {
			errs["delete"] = "value may only be 4096 characters long"
		}
		for _, k := range splitList(v) {
			if !configIDRE.MatchString(k) {
				errs["delete"] = fmt.Sprintf("invalid format - invalid configuration ID '%s'\n", k)
			}
		}
	}
	if len(r.params["digest"]) > 64 {
		errs["digest"] = "value may only be 64 characters long"
	}
	if len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

// splitList is PVE::Tools::split_list.
func splitList(v string) []string {
	if strings.Contains(v, "\x00") {
		return strings.Split(v, "\x00")
	}
	return strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n' })
}

// checkMappingConfig is SectionConfig::check_config($id, $param, 1, 1):
// no value may hold a line feed; with create set (the API passes 1 for
// updates too), map must be given. It returns the settings to store.
func checkMappingConfig(params map[string]string) (mapping, error) {
	var m mapping
	m.Opts = map[string]string{}
	for k, v := range params {
		if k == "id" || k == "digest" || k == "delete" {
			continue
		}
		if k != "map" && strings.ContainsAny(v, "\r\n") {
			return m, die("property contains a line feed\n")
		}
		if k == "map" {
			m.Map = mapLines(v)
		} else if v != "" {
			m.Opts[k] = v
		}
	}
	if m.Map == nil {
		return m, die("missing value for required option 'map'\n")
	}
	return m, nil
}

// createMapping is POST /cluster/mapping/pci (Mapping.Modify on /mapping/pci).
func (e *Emulator) createMapping(r *request) (any, error) {
	if err := r.auth.check("/mapping/pci", false, "Mapping.Modify"); err != nil {
		return nil, err
	}
	if perr := verifyMappingParams(r, true); perr != nil {
		return nil, perr
	}
	m, err := checkMappingConfig(r.params)
	if err != nil {
		return nil, errf("%s", err.Error())
	}
	m.ID = r.params["id"]
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.mapping(m.ID) != nil {
		return nil, errf("create hardware mapping failed: pci ID '%s' already defined\n", m.ID)
	}
	e.st.mappings = append(e.st.mappings, m)
	return nil, nil
}

// updateMapping is PUT /cluster/mapping/pci/{id} (Mapping.Modify on
// /mapping/pci/{id}): digest, existence, check_config, delete=, then the
// given keys replace the stored ones.
func (e *Emulator) updateMapping(r *request) (any, error) {
	id := r.vars["id"]
	if err := r.auth.check("/mapping/pci/"+id, false, "Mapping.Modify"); err != nil {
		return nil, err
	}
	if perr := verifyMappingParams(r, false); perr != nil {
		return nil, perr
	}
	fail := func(format string, args ...any) error {
		return errf("update hardware mapping failed: "+format, args...)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if digest := r.params["digest"]; digest != "" && digest != e.st.mappingDigest() {
		return nil, fail("detected modified configuration - file changed by other user? Try again.\n")
	}
	cur := e.st.mapping(id)
	if cur == nil {
		return nil, fail("pci ID '%s' does not exist\n", id)
	}
	set, err := checkMappingConfig(r.params)
	if err != nil {
		return nil, fail("%s", err.Error())
	}
	// SectionConfig::delete_from_config
	for _, k := range splitList(r.params["delete"]) {
		switch {
		case !slices.Contains(mappingOptions, k):
			return nil, fail("no such option '%s'\n", k)
		case k == "map":
			return nil, fail("unable to delete required option '%s'\n", k)
		case set.Opts[k] != "":
			return nil, fail("cannot set and delete property '%s' at the same time!\n", k)
		}
		delete(cur.Opts, k)
	}
	cur.Map = set.Map
	for k, v := range set.Opts {
		cur.Opts[k] = v
	}
	return nil, nil
}

// deleteMapping is DELETE /cluster/mapping/pci/{id} (Mapping.Modify on
// /mapping/pci): an unknown id is no error.
func (e *Emulator) deleteMapping(r *request) (any, error) {
	if err := r.auth.check("/mapping/pci", false, "Mapping.Modify"); err != nil {
		return nil, err
	}
	if perr := verifyParams(r.params, map[string]string{"id": "string"}); perr != nil {
		return nil, perr
	}
	if perr := verifyConfigID("id", r.vars["id"]); perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.mappings = slices.DeleteFunc(e.st.mappings, func(m mapping) bool { return m.ID == r.vars["id"] })
	return nil, nil
}

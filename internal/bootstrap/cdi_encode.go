package bootstrap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// cdiSpecHeader opens a YAML spec gpu-bootstrap writes. It carries nothing
// that changes between runs (no time, no version), so the same host gives
// the same bytes.
const cdiSpecHeader = "# CDI spec of this host's NVIDIA GPUs, written by gpu-bootstrap (cdi step).\n" +
	"# It is rewritten whenever the GPUs or the driver change; edit the bootstrap config, not this file.\n"

// encodeCDISpec renders a spec as nvidia-ctk does: YAML with the spec's
// field order and four-space indents after a "---" line, or indented JSON
// when the target file ends in .json.
func encodeCDISpec(spec *specs.Spec, target string) ([]byte, error) {
	if strings.EqualFold(filepath.Ext(target), ".json") {
		data, err := json.MarshalIndent(spec, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encoding the CDI spec: %w", err)
		}
		return append(data, '\n'), nil
	}
	var buf bytes.Buffer
	buf.WriteString(cdiSpecHeader)
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)
	if err := enc.Encode(spec); err != nil {
		return nil, fmt.Errorf("encoding the CDI spec: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding the CDI spec: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeCDISpec reads a spec file (YAML or JSON, which is YAML). A file that
// is not a spec is a *ParseError naming the line, and is left alone. Keys
// the CDI spec types do not know are ignored.
func decodeCDISpec(target string, data []byte) (*specs.Spec, error) {
	var spec specs.Spec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		return nil, &ParseError{Path: target, Line: yamlErrorLine(err), Err: err}
	}
	return &spec, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorLine is the first line number a yaml.v3 error names, 0 if none.
func yamlErrorLine(err error) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// sameCDISpec reports whether two specs say the same thing. The generated
// one goes through the same encoding and decoding as the one read from disk
// so that empty and absent lists compare equal.
func sameCDISpec(onDisk, generated *specs.Spec) bool {
	data, err := yaml.Marshal(generated)
	if err != nil {
		return false
	}
	var normalized specs.Spec
	if err := yaml.Unmarshal(data, &normalized); err != nil {
		return false
	}
	return reflect.DeepEqual(*onDisk, normalized)
}

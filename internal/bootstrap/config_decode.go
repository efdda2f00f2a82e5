package bootstrap

// config_decode.go turns the bytes of a desired-state file into a Config, or
// into errors that say where (file:line:column) and what is wrong in words.
//
// It decodes YAML 1.2 (gopkg.in/yaml.v3's node tree) into the Config types by
// their json tags, itself, rather than through a generic unmarshaller, so that
// every problem is found in one pass with the node it concerns:
//   - a key no section has (with the nearest known key as a suggestion),
//   - a key given twice (YAML 1.2 §3.2.1.1: mapping keys are unique),
//   - a value of the wrong kind at any depth ("8" quoted where a number goes,
//     a single value where a list goes, a section given as a scalar),
//   - a key with no value (`runtime:` alone), which would otherwise read as
//     "section left out" and silently skip a step,
//   - a file with no sections or with more than one YAML document.
//
// Encoding follows YAML 1.2 §5.2: the stream is UTF-8 here; a UTF-8 byte
// order mark at its start is allowed and skipped; UTF-16/32 and bytes that
// are not UTF-8 are errors naming the line and column. Booleans are YAML 1.2's
// true/false, and for a boolean key also the YAML 1.1 words (yes/no, on/off)
// that yaml.v3 accepts for typed booleans. A string key takes any scalar as
// written (branch: 570 is "570").
//
// Where each value sat is kept (Config.origins) so that Validate's errors,
// found after flags are applied, name the file position too — or the flag
// that set the value.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxConfigBytes bounds a desired-state file. The full example in the README
// is under 2 KiB; a file a thousand times larger is the wrong file (a log, an
// image), and reading it whole would only delay that error.
const maxConfigBytes = 1 << 20

// maxConfigErrors is how many problems one run reports; a file that is
// wrong everywhere (the wrong file) gets a screenful, not thousands of lines.
const maxConfigErrors = 20

// configSections are the top-level keys, for the "no sections" error.
var configSections = jsonKeys(reflect.TypeFor[Config]())

// origin is where a config value came from: a position in the file, or a flag.
type origin struct {
	file         string
	line, column int
	flag         string // "--runtime" when a flag set it
}

// decodeConfig parses one YAML document into a Config. Every problem found is
// returned at once, as *FieldError values with the position filled in.
func decodeConfig(name string, data []byte) (*Config, error) {
	data, err := configText(name, data)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, noSections(name, 0, 0)
		}
		return nil, yamlSyntaxError(name, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &FieldError{File: name, Line: next.Line, Column: next.Column,
			Problem: "a second YAML document starts here (after ---); gpu-bootstrap reads one document per file: merge the documents into one, or remove the --- separator"}
	case !errors.Is(err, io.EOF):
		return nil, &FieldError{File: name, Line: yamlErrorLine(err),
			Problem: "text after the first YAML document (a --- separator, then " + yamlProblem(err) + "); gpu-bootstrap reads one document per file: remove what follows the first document"}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" || root.Kind == yaml.MappingNode && len(root.Content) == 0 {
		return nil, noSections(name, root.Line, root.Column)
	}
	d := &configDecoder{file: name, origins: map[string]origin{}}
	cfg := &Config{}
	d.decode(root, reflect.ValueOf(cfg).Elem(), "")
	if len(d.errs) > maxConfigErrors {
		more := len(d.errs) - maxConfigErrors
		d.errs = append(d.errs[:maxConfigErrors], &FieldError{File: name, Problem: fmt.Sprintf("and %d more problems; fix these first", more)})
	}
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	cfg.origins = d.origins
	return cfg, nil
}

func noSections(name string, line, column int) error {
	return &FieldError{File: name, Line: line, Column: column,
		Problem: fmt.Sprintf("the config has no sections; give at least one of %s (see README, \"gpu-bootstrap: the node side\", or examples/bootstrap)", strings.Join(configSections, ", "))}
}

// configText checks the encoding (YAML 1.2 §5.2) and drops a UTF-8 byte
// order mark.
func configText(name string, data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0, 0, 0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0, 0}):
		return nil, &FieldError{File: name, Line: 1, Column: 1, Problem: "the file is UTF-32 (it starts with a UTF-32 byte order mark); save it as UTF-8"}
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return nil, &FieldError{File: name, Line: 1, Column: 1, Problem: "the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"}
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if utf8.Valid(data) {
		return data, nil
	}
	line, column := 1, 1
	for rest := data; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		if r == utf8.RuneError && size <= 1 {
			return nil, &FieldError{File: name, Line: line, Column: column,
				Problem: fmt.Sprintf("byte 0x%02X is not UTF-8 text; save the file as UTF-8 (a binary file, or text in Latin-1 or another legacy encoding, is not a YAML config)", rest[0])}
		}
		if r == '\n' {
			line, column = line+1, 1
		} else {
			column++
		}
		rest = rest[size:]
	}
	return data, nil
}

// yamlLineRE is the "yaml: line N: " prefix of yaml.v3's errors
// (yamlErrorLine, in cdi_encode.go, reads N).
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlSyntaxError words a yaml.v3 parse error with a position. yaml.v3 names
// the line but not the column; a tab in indentation, the most common cause,
// is located exactly. Some messages name no line; the line is then the first
// whose prefix of the file fails to parse.
func yamlSyntaxError(name string, data []byte, err error) error {
	msg := yamlProblem(err)
	lines := strings.SplitAfter(string(data), "\n")
	if strings.Contains(msg, "tab") || strings.Contains(msg, "cannot start any token") {
		for i, text := range lines {
			indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
			if tab := strings.IndexByte(indent, '\t'); tab >= 0 {
				return &FieldError{File: name, Line: i + 1, Column: tab + 1,
					Problem: "a tab in the indentation; YAML indents with spaces only (YAML 1.2 §6.1): replace the tab with spaces"}
			}
		}
	}
	line := yamlErrorLine(err)
	if line == 0 {
		line = firstFailingLine(lines)
	}
	if msg == "found incompatible YAML document" {
		return &FieldError{File: name, Line: line,
			Problem: "a %YAML directive for a version other than 1.1, which the YAML reader (gopkg.in/yaml.v3) refuses; remove the %YAML line"}
	}
	return &FieldError{File: name, Line: line, Problem: "not valid YAML: " + msg + "; check the indentation and quoting from this line on"}
}

// yamlProblem is a yaml.v3 error's message without its "yaml: line N: ".
func yamlProblem(err error) string {
	return strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: ")
}

// firstFailingLine is the smallest n such that the first n lines do not parse,
// 0 if none (or the file is too long to search).
func firstFailingLine(lines []string) int {
	if len(lines) > 2000 || len(strings.Join(lines, "")) > 64<<10 {
		return 0 // quadratic: only for files of a plausible size
	}
	var prefix strings.Builder
	for i, text := range lines {
		prefix.WriteString(text)
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(prefix.String()), &n); err != nil {
			return i + 1
		}
	}
	return 0
}

// configDecoder walks a YAML node tree into Go values, collecting errors.
type configDecoder struct {
	file    string
	origins map[string]origin
	errs    []error
}

func (d *configDecoder) fail(n *yaml.Node, field, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{File: d.file, Line: n.Line, Column: n.Column, Field: field, Problem: fmt.Sprintf(format, args...)})
}

// decode sets v from n; field is the key path ("runtime.engine", "" for the
// document).
func (d *configDecoder) decode(n *yaml.Node, v reflect.Value, field string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if field != "" {
		d.origins[field] = origin{file: d.file, line: n.Line, column: n.Column}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		d.fail(n, field, "has no value; give one (see README), or remove the key to leave %s out", last(field))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), field)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, v, field)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, field, "is %s; want a list, e.g. %s: [%s]", describeNode(n), last(field), exampleOf(v.Type().Elem()))
			return
		}
		list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, list.Index(i), fmt.Sprintf("%s[%d]", field, i))
		}
		v.Set(list)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, field, "is %s; want a single value, e.g. %s: %s", describeNode(n), last(field), exampleOf(v.Type()))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := yamlBool(n)
		if !ok {
			hint := ""
			if quoted(n) && (n.Value == "true" || n.Value == "false") {
				hint = " (remove the quotes)"
			}
			d.fail(n, field, "is %s; want true or false%s", describeNode(n), hint)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.decodeInteger(n, v, field)
	default:
		// A Config field of a kind this decoder does not know: a programming
		// error, caught by TestConfigDecoderKnowsEveryFieldType.
		d.fail(n, field, "cannot be read: the config decoder has no rule for Go type %s (a gpu-bootstrap bug; please report it)", v.Type())
	}
}

func (d *configDecoder) decodeStruct(n *yaml.Node, v reflect.Value, field string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "is %s; %s is a section: key: value pairs, one per line, such as %s (see README)", describeNode(n), orDocument(field), exampleOf(v.Type()))
		return
	}
	keys := jsonKeys(v.Type())
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		path := join(field, key.Value)
		if key.Kind != yaml.ScalarNode || key.Tag == "!!merge" {
			d.fail(key, field, "has a key that is not a plain name (%s); write the keys out by name: %s", describeNode(key), strings.Join(keys, ", "))
			continue
		}
		if first, dup := seen[key.Value]; dup {
			d.fail(key, path, "is set twice (first on line %d); YAML keys are unique: keep one", first.Line)
			continue
		}
		seen[key.Value] = key
		if !slices.Contains(keys, key.Value) {
			hint := suggest(key.Value, keys)
			if home := homeOf(key.Value); home != "" && home != path {
				hint = fmt.Sprintf(" here (it belongs at %s)", home)
			}
			d.fail(key, path, "unknown key%s; %s takes %s", hint, orDocument(field), strings.Join(keys, ", "))
			continue
		}
		d.decode(value, v.Field(jsonFieldIndex(v.Type(), key.Value)), path)
		if value.Kind == yaml.MappingNode {
			// A key missing from a section is reported at the section's key.
			d.origins[path] = origin{file: d.file, line: key.Line, column: key.Column}
		}
	}
}

func (d *configDecoder) decodeInteger(n *yaml.Node, v reflect.Value, field string) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && wholeNumber.MatchString(n.Value) {
		lo, hi := intRange(v.Type())
		d.fail(n, field, "%s is out of range; want a whole number from %s to %s", n.Value, lo, hi)
		return
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		hint := ""
		if quoted(n) && wholeNumber.MatchString(n.Value) {
			hint = " (remove the quotes)"
		}
		d.fail(n, field, "is %s; want a whole number%s", describeNode(n), hint)
		return
	}
	var signed int64
	var unsigned uint64
	errSigned := n.Decode(&signed)
	errUnsigned := n.Decode(&unsigned)
	inRange := false
	switch {
	case v.CanInt():
		inRange = errSigned == nil && !v.OverflowInt(signed)
	case errUnsigned == nil:
		inRange = !v.OverflowUint(unsigned)
	}
	if !inRange {
		lo, hi := intRange(v.Type())
		d.fail(n, field, "%s is out of range; want a whole number from %s to %s", n.Value, lo, hi)
		return
	}
	if v.CanInt() {
		v.SetInt(signed)
	} else {
		v.SetUint(unsigned)
	}
}

// yamlBool reads YAML 1.2's true/false and, as yaml.v3 does for a typed
// boolean, YAML 1.1's yes/no/on/off.
func yamlBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || quoted(n) {
		return false, false
	}
	switch strings.ToLower(n.Value) {
	case "true", "yes", "on", "y":
		return true, true
	case "false", "no", "off", "n":
		return false, true
	}
	return false, false
}

// wholeNumber is an integer as YAML 1.2's core schema writes one in decimal;
// yaml.v3 tags one too large for 64 bits !!float.
var wholeNumber = regexp.MustCompile(`^[-+]?[0-9_]+$`)

func quoted(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
}

// describeNode says in words what a node is: `the text "8" (quoted)`, `a list`.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a section (key: value pairs)"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch {
		case quoted(n):
			return fmt.Sprintf("the quoted text %q", n.Value)
		case n.Tag == "!!int" || n.Tag == "!!float":
			return "the number " + n.Value
		case n.Tag == "!!bool":
			return "the boolean " + n.Value
		default:
			return fmt.Sprintf("the text %q", n.Value)
		}
	}
	return "a YAML " + n.Tag
}

// exampleOf is a sample value of type t for error messages.
func exampleOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return exampleOf(t.Elem())
	case reflect.Struct:
		keys := jsonKeys(t)
		return keys[0] + ": ..."
	case reflect.Bool:
		return "true"
	case reflect.String:
		return "value"
	default:
		return "1"
	}
}

// intRange is the smallest and largest value of an integer type, as text.
func intRange(t reflect.Type) (lo, hi string) {
	bits := t.Bits()
	if v := reflect.Zero(t); v.CanUint() {
		return "0", strconv.FormatUint(math.MaxUint64>>(64-bits), 10)
	}
	return strconv.FormatInt(math.MinInt64>>(64-bits), 10), strconv.FormatInt(math.MaxInt64>>(64-bits), 10)
}

// jsonKeys are the json names of a struct's fields, in declaration order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name := jsonName(f); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func jsonFieldIndex(t reflect.Type, key string) int {
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == key {
			return i
		}
	}
	return -1
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// homeOf is the key path where key is a known key ("runtime.engine" for
// "engine"), "" when it is nowhere or in more than one section.
func homeOf(key string) string {
	var homes []string
	var walk func(t reflect.Type, field string)
	walk = func(t reflect.Type, field string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			name := jsonName(f)
			if name == "" {
				continue
			}
			if name == key {
				homes = append(homes, join(field, name))
			}
			walk(f.Type, join(field, name))
		}
	}
	walk(reflect.TypeFor[Config](), "")
	if len(homes) != 1 {
		return ""
	}
	return homes[0]
}

// suggest is ` (did you mean "engine"?)` when a known key is within two
// edits of the unknown one.
func suggest(key string, keys []string) string {
	best, bestDist := "", 3
	for _, k := range keys {
		if dist := editDistance(strings.ToLower(key), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func orDocument(field string) string {
	if field == "" {
		return "the config"
	}
	return field
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func last(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[i+1:]
	}
	if field == "" {
		return "the config"
	}
	return field
}

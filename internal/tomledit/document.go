// Package tomledit changes single keys of a TOML document in place. What it
// is not asked to change — comments, blank lines, key order, quoting,
// indentation, other tables — stays byte for byte, which decoding and
// re-encoding (go-toml, BurntSushi/toml, nvidia-ctk's go-toml v1 trees)
// cannot promise. It is for configuration files that people also edit by
// hand: /etc/containerd/config.toml, CRI-O drop-ins.
//
// A Doc is parsed with go-toml/v2's unstable parser (byte ranges), its keys
// checked by an indexed port of go-toml's duplicate-key tracker (seen.go)
// and its values decoded by go-toml in one call (decode.go), in time linear
// in the document; every edit splices text and parses the result again, so an edit that would produce invalid TOML is refused and
// leaves the Doc as it was. It does not reformat, reorder, remove tables or
// edit inside arrays of tables.
package tomledit

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Doc is a TOML document being edited.
type Doc struct {
	src     []byte
	bom     []byte // a UTF-8 byte order mark before src, or nil
	nl      string // the document's line ending
	root    map[string]any
	tables  []*table // explicit [headers] and [[array headers]], in order
	entries []*entry // key/values, inline-table members included, in order
}

// SyntaxError is a document that is not valid TOML.
type SyntaxError struct {
	Line, Column int // 1-based; 0 when unknown
	Msg          string
}

func (e *SyntaxError) Error() string { return e.Msg }

// table is an explicit table header.
type table struct {
	path      []string
	array     bool
	lineStart int    // first byte of the header's line
	lineEnd   int    // first byte after the header's line
	indent    string // whitespace before '['
}

// entry is one key = value.
type entry struct {
	path     []string // full key path
	start    int      // first byte of the key
	end      int      // first byte after the value
	valStart int      // first byte of the value
	kind     unstable.Kind
	table    *table // the header it sits under; nil at the root
	inline   *entry // the inline table it sits in; nil when top-level
	// lastElemStart/End locate an array's last element when it is a plain
	// scalar (-1 otherwise).
	lastElemStart, lastElemEnd int
}

// utf8BOM is the UTF-8 byte order mark. TOML's reference decoder
// (BurntSushi/toml, CRI-O's) and go-toml v1 (containerd 1.5 to 1.7) skip
// one at the start of a file; go-toml v2's parser does not, so Parse sets
// it aside and Bytes puts it back.
var utf8BOM = []byte("\uFEFF")

// Parse reads a document. An empty document is valid; a UTF-8 byte order
// mark at its start is kept but not parsed.
func Parse(src []byte) (*Doc, error) {
	var bom []byte
	if bytes.HasPrefix(src, utf8BOM) {
		bom, src = utf8BOM, src[len(utf8BOM):]
	}
	d := &Doc{src: append([]byte(nil), src...), bom: bom}
	if err := d.index(); err != nil {
		return nil, err
	}
	return d, nil
}

// Bytes is the document's current text.
func (d *Doc) Bytes() []byte { return append(append([]byte(nil), d.bom...), d.src...) }

// Get is the decoded value at path: string, bool, int64, float64, []any,
// map[string]any (a table) or a go-toml date/time type.
func (d *Doc) Get(path ...string) (any, bool) {
	var cur any = d.root
	for _, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// IsEmpty reports whether the document defines nothing (it may hold
// comments).
func (d *Doc) IsEmpty() bool { return len(d.root) == 0 }

// Has reports whether path holds a value or a table.
func (d *Doc) Has(path ...string) bool {
	_, ok := d.Get(path...)
	return ok
}

// Leaf is one value under a table, as Leaves returns it.
type Leaf struct {
	Path []string // relative to the prefix given to Leaves
	Raw  string   // the value's text, as written
}

// Leaves lists the values under prefix in document order, with inline
// tables opened up into their members, so they can be copied elsewhere with
// SetRaw.
func (d *Doc) Leaves(prefix ...string) []Leaf {
	var leaves []Leaf
	for _, e := range d.entries {
		if e.kind == unstable.InlineTable || len(e.path) <= len(prefix) || !hasPrefix(e.path, prefix) {
			continue
		}
		leaves = append(leaves, Leaf{
			Path: append([]string(nil), e.path[len(prefix):]...),
			Raw:  string(d.src[e.valStart:e.end]),
		})
	}
	return leaves
}

// index parses d.src and rebuilds the decoded values and the byte index, in
// time linear in the document's size (see decode.go).
func (d *Doc) index() error {
	d.nl = "\n"
	if bytes.Contains(d.src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	d.tables, d.entries = nil, nil

	var p unstable.Parser
	p.Reset(d.src)
	seen := newSeenTracker()
	var current *table
	var order []any // *table and assignment, in document order
	var assignments []assignment
	var stop error // the first key or syntax error; values before it are checked first
	for p.NextExpression() {
		n := p.Expression()
		if err := seen.check(n); err != nil {
			stop = d.keyError(n, err)
			break
		}
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			current = d.addTable(n)
			order = append(order, current)
		case unstable.KeyValue:
			var base []string
			if current != nil {
				base = current.path
			}
			e := d.addEntry(n, current, nil, base)
			a := assignment{key: keyParts(n), at: e.valStart, raw: d.src[e.valStart:e.end]}
			order = append(order, a)
			assignments = append(assignments, a)
		}
	}
	if stop == nil {
		if err := p.Error(); err != nil {
			stop = d.parserError(err)
		}
	}
	// go-toml decodes each value right after checking its key, so a bad
	// value before the first key or syntax error is the error to report.
	values, err := d.decodeValues(assignments)
	if err != nil {
		return err
	}
	if stop != nil {
		return stop
	}
	root, err := build(order, values)
	if err != nil {
		return &SyntaxError{Msg: err.Error()}
	}
	d.root = root
	return nil
}

func (d *Doc) addTable(n *unstable.Node) *table {
	t := &table{array: n.Kind == unstable.ArrayTable}
	first, last := -1, 0
	it := n.Key()
	for it.Next() {
		k := it.Node()
		t.path = append(t.path, string(k.Data))
		if first < 0 {
			first = int(k.Raw.Offset)
		}
		last = int(k.Raw.Offset + k.Raw.Length)
	}
	open := first
	for open > 0 && (d.src[open-1] == ' ' || d.src[open-1] == '\t') {
		open--
	}
	for open > 0 && d.src[open-1] == '[' {
		open--
	}
	t.lineStart = d.lineStart(open)
	t.indent = string(d.src[t.lineStart:open])
	t.lineEnd = d.lineEndAfter(last)
	d.tables = append(d.tables, t)
	return t
}

func (d *Doc) addEntry(n *unstable.Node, t *table, inline *entry, base []string) *entry {
	e := &entry{table: t, inline: inline, lastElemStart: -1, lastElemEnd: -1}
	e.path = append([]string(nil), base...)
	keyEnd := 0
	it := n.Key()
	for it.Next() {
		k := it.Node()
		e.path = append(e.path, string(k.Data))
		keyEnd = int(k.Raw.Offset + k.Raw.Length)
	}
	e.start = int(n.Raw.Offset)
	e.end = int(n.Raw.Offset + n.Raw.Length)
	e.valStart = d.valueStart(keyEnd)
	v := n.Value()
	e.kind = v.Kind
	d.entries = append(d.entries, e)
	switch v.Kind {
	case unstable.Array:
		elems := v.Children()
		for elems.Next() {
			el := elems.Node()
			e.lastElemStart, e.lastElemEnd = -1, -1
			if el.Raw.Length > 0 && el.Kind != unstable.Array && el.Kind != unstable.InlineTable {
				e.lastElemStart = int(el.Raw.Offset)
				e.lastElemEnd = int(el.Raw.Offset + el.Raw.Length)
			}
		}
	case unstable.InlineTable:
		members := v.Children()
		for members.Next() {
			d.addEntry(members.Node(), t, e, e.path)
		}
	}
	return e
}

// valueStart skips from the end of a key over " = " to the value.
func (d *Doc) valueStart(keyEnd int) int {
	i := keyEnd
	for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t') {
		i++
	}
	if i < len(d.src) && d.src[i] == '=' {
		i++
	}
	for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t') {
		i++
	}
	return i
}

func (d *Doc) lineStart(pos int) int {
	return bytes.LastIndexByte(d.src[:pos], '\n') + 1
}

// lineEndAfter is the first byte after the line holding pos (len when the
// line is the last one and has no line break).
func (d *Doc) lineEndAfter(pos int) int {
	if pos > len(d.src) {
		return len(d.src)
	}
	i := bytes.IndexByte(d.src[pos:], '\n')
	if i < 0 {
		return len(d.src)
	}
	return pos + i + 1
}

func (d *Doc) lineIndent(pos int) string {
	start := d.lineStart(pos)
	end := start
	for end < len(d.src) && (d.src[end] == ' ' || d.src[end] == '\t') {
		end++
	}
	return string(d.src[start:end])
}

// line is the 1-based line number of pos.
func (d *Doc) line(pos int) int {
	return bytes.Count(d.src[:pos], []byte("\n")) + 1
}

func hasPrefix(path, prefix []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

func equalPath(a, b []string) bool { return len(a) == len(b) && hasPrefix(a, b) }

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// dotted is a key path as TOML writes it.
func dotted(path []string) string {
	parts := make([]string, len(path))
	for i, k := range path {
		parts[i] = renderKey(k)
	}
	return strings.Join(parts, ".")
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	}
	return fmt.Sprintf("a %T", v)
}

package tomledit

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Set makes path hold value (string, bool, int, int64 or []string). A key
// that already holds an equal value is left alone and Set reports false; an
// existing key gets its value replaced where it stands; a missing key is
// added to the table that holds its siblings (see insert).
func (d *Doc) Set(path []string, value any) (changed bool, err error) {
	raw, err := renderValue(value)
	if err != nil {
		return false, err
	}
	return d.SetRaw(path, raw)
}

// SetRaw is Set with the value's TOML text, as Leaves returns it.
func (d *Doc) SetRaw(path []string, raw string) (changed bool, err error) {
	if len(path) == 0 {
		return false, fmt.Errorf("tomledit: empty key path")
	}
	var probe map[string]any
	if err := toml.Unmarshal([]byte("v = "+raw), &probe); err != nil {
		return false, fmt.Errorf("tomledit: %q is not a TOML value: %w", raw, err)
	}
	want := probe["v"]
	if cur, ok := d.Get(path...); ok {
		if reflect.DeepEqual(cur, want) {
			return false, nil
		}
		if _, isTable := cur.(map[string]any); isTable {
			return false, d.errorAt(path, "%s is a table, not a value", dotted(path))
		}
		e := d.entryAt(path)
		if e == nil {
			return false, fmt.Errorf("tomledit: %s is set in a way this editor cannot change (an array of tables?)", dotted(path))
		}
		return true, d.splice(e.valStart, e.end, raw)
	}
	return true, d.insert(path, raw)
}

// Delete removes the key at path, with the rest of its line (a trailing
// comment goes with it). It reports false when the key is not there.
func (d *Doc) Delete(path []string) (bool, error) {
	cur, ok := d.Get(path...)
	if !ok {
		return false, nil
	}
	if _, isTable := cur.(map[string]any); isTable {
		return false, d.errorAt(path, "%s is a table; tomledit deletes values only", dotted(path))
	}
	e := d.entryAt(path)
	if e == nil {
		return false, fmt.Errorf("tomledit: cannot find %s in the text", dotted(path))
	}
	if e.inline != nil {
		members := d.members(e.inline)
		i := indexOf(members, e)
		switch {
		case len(members) == 1:
			return true, d.splice(e.inline.valStart, e.inline.end, "{}")
		case i > 0:
			return true, d.splice(members[i-1].end, e.end, "")
		default:
			return true, d.splice(e.start, members[i+1].start, "")
		}
	}
	return true, d.splice(d.lineStart(e.start), d.lineEndAfter(e.end), "")
}

// AppendString adds s to the string array at path unless it is there
// already; a missing array is created with s alone. The array keeps its
// layout: one line stays one line, one element per line gets a new line.
func (d *Doc) AppendString(path []string, s string) (bool, error) {
	cur, ok := d.Get(path...)
	if !ok {
		return d.Set(path, []string{s})
	}
	list, ok := cur.([]any)
	if !ok {
		return false, d.errorAt(path, "%s is %s, not an array", dotted(path), describe(cur))
	}
	for _, v := range list {
		if v == s {
			return false, nil
		}
	}
	e := d.entryAt(path)
	if e == nil || e.kind != unstable.Array {
		return false, fmt.Errorf("tomledit: cannot find the array %s in the text", dotted(path))
	}
	if len(list) == 0 {
		return true, d.splice(e.valStart, e.end, "["+quote(s)+"]")
	}
	if e.lastElemEnd < 0 {
		return false, d.errorAt(path, "%s ends with a nested value; add %q by hand", dotted(path), s)
	}
	text := ", " + quote(s)
	if strings.Contains(string(d.src[e.valStart:e.end]), "\n") {
		text = "," + d.nl + d.lineIndent(e.lastElemStart) + quote(s)
	}
	return true, d.splice(e.lastElemEnd, e.lastElemEnd, text)
}

// insert adds a key that does not exist yet, where a person would put it:
//   - into the inline table that holds the path, when one does;
//   - at the root, after the last root key (or before the first table);
//   - into the [parent] table, after its last key;
//   - next to the dotted keys that already define parent (a.b.c = 1);
//   - otherwise under a new [parent] header: right before the first table
//     below parent when there is one, else after the tables that share the
//     longest part of the path (so runtimes.nvidia follows runtimes.runc).
func (d *Doc) insert(path []string, raw string) error {
	parent, key := path[:len(path)-1], path[len(path)-1]
	for i := 1; i <= len(parent); i++ {
		if v, ok := d.Get(parent[:i]...); ok {
			if _, isTable := v.(map[string]any); !isTable {
				return d.errorAt(parent[:i], "%s is %s, not a table", dotted(parent[:i]), describe(v))
			}
		}
	}
	if e := d.inlineAncestor(parent); e != nil {
		return d.insertInline(e, path[len(e.path):], raw)
	}
	if len(parent) == 0 {
		return d.insertRoot(key, raw)
	}
	if t := d.tableAt(parent); t != nil {
		return d.insertInTable(t, key, raw)
	}
	if e := d.lastDottedUnder(parent); e != nil {
		var base []string
		if e.table != nil {
			base = e.table.path
		}
		return d.insertAfter(e, path[len(base):], raw)
	}
	return d.insertTable(parent, key, raw)
}

func (d *Doc) insertInline(e *entry, rel []string, raw string) error {
	kv := dotted(rel) + " = " + raw
	members := d.members(e)
	if len(members) == 0 {
		return d.splice(e.valStart, e.end, "{ "+kv+" }")
	}
	last := members[len(members)-1]
	return d.splice(last.end, last.end, ", "+kv)
}

func (d *Doc) insertRoot(key, raw string) error {
	kv := renderKey(key) + " = " + raw
	var last *entry
	for _, e := range d.entries {
		if e.table == nil && e.inline == nil {
			last = e
		}
	}
	switch {
	case last != nil:
		return d.insertAfter(last, []string{key}, raw)
	case len(d.tables) > 0:
		at := d.blockStart(d.tables[0])
		return d.splice(at, at, kv+d.nl+d.nl)
	default:
		return d.append(kv + d.nl)
	}
}

func (d *Doc) insertInTable(t *table, key, raw string) error {
	if t.array {
		return fmt.Errorf("tomledit: %s is an array of tables; edit it by hand", dotted(t.path))
	}
	var last *entry
	for _, e := range d.entries {
		if e.table == t && e.inline == nil {
			last = e
		}
	}
	if last != nil {
		return d.insertAfter(last, []string{key}, raw)
	}
	text := t.indent + d.kvIndent() + renderKey(key) + " = " + raw + d.nl
	if t.lineEnd == len(d.src) && !strings.HasSuffix(string(d.src), "\n") {
		text = d.nl + text
	}
	return d.splice(t.lineEnd, t.lineEnd, text)
}

// insertAfter puts rel = raw on the line after e, indented like e.
func (d *Doc) insertAfter(e *entry, rel []string, raw string) error {
	at := d.lineEndAfter(e.end)
	text := d.lineIndent(e.start) + dotted(rel) + " = " + raw + d.nl
	if at == len(d.src) && !strings.HasSuffix(string(d.src), "\n") {
		text = d.nl + text
	}
	return d.splice(at, at, text)
}

func (d *Doc) insertTable(parent []string, key, raw string) error {
	header := "[" + dotted(parent) + "]"
	for _, t := range d.tables {
		if len(t.path) > len(parent) && hasPrefix(t.path, parent) {
			indent := d.headerIndent(t, len(parent))
			text := indent + header + d.nl + indent + d.kvIndent() + renderKey(key) + " = " + raw + d.nl + d.nl
			at := d.blockStart(t)
			return d.splice(at, at, text)
		}
	}
	var anchor *table
	best := 0
	for _, t := range d.tables {
		if c := commonPrefix(t.path, parent); c > 0 && c >= best {
			best, anchor = c, t
		}
	}
	if anchor == nil {
		text := header + d.nl + d.kvIndent() + renderKey(key) + " = " + raw + d.nl
		if len(strings.TrimSpace(string(d.src))) > 0 {
			text = d.nl + text
		}
		return d.append(text)
	}
	indent := d.headerIndent(anchor, len(parent))
	text := d.nl + indent + header + d.nl + indent + d.kvIndent() + renderKey(key) + " = " + raw + d.nl
	at := d.bodyEnd(anchor)
	if at == len(d.src) && len(d.src) > 0 && !strings.HasSuffix(string(d.src), "\n") {
		text = d.nl + text
	}
	return d.splice(at, at, text)
}

// append adds text at the end, on a line of its own.
func (d *Doc) append(text string) error {
	if len(d.src) > 0 && !strings.HasSuffix(string(d.src), "\n") {
		text = d.nl + text
	}
	return d.splice(len(d.src), len(d.src), text)
}

// splice replaces src[start:end] with text and parses the result; an edit
// that breaks the document is undone and reported.
func (d *Doc) splice(start, end int, text string) error {
	old := d.src
	next := make([]byte, 0, len(old)-(end-start)+len(text))
	next = append(next, old[:start]...)
	next = append(next, text...)
	next = append(next, old[end:]...)
	d.src = next
	if err := d.index(); err != nil {
		d.src = old
		if rerr := d.index(); rerr != nil {
			panic("tomledit: cannot re-read the previous document: " + rerr.Error())
		}
		return fmt.Errorf("tomledit: the edit would make the document invalid (%v); edit it by hand", err)
	}
	return nil
}

// entryAt is the key/value whose full path is path.
func (d *Doc) entryAt(path []string) *entry {
	var found *entry
	for _, e := range d.entries {
		if equalPath(e.path, path) {
			found = e
		}
	}
	return found
}

func (d *Doc) tableAt(path []string) *table {
	for _, t := range d.tables {
		if equalPath(t.path, path) {
			return t
		}
	}
	return nil
}

// inlineAncestor is the deepest inline table at parent or above it.
func (d *Doc) inlineAncestor(parent []string) *entry {
	var found *entry
	for _, e := range d.entries {
		if e.kind == unstable.InlineTable && hasPrefix(parent, e.path) && (found == nil || len(e.path) > len(found.path)) {
			found = e
		}
	}
	return found
}

// lastDottedUnder is the last key whose dotted name defines parent inside
// a shallower table ([a] b.c = 1 defines a.b).
func (d *Doc) lastDottedUnder(parent []string) *entry {
	var found *entry
	for _, e := range d.entries {
		if e.inline != nil || !hasPrefix(e.path, parent) || len(e.path) <= len(parent) {
			continue
		}
		if e.table == nil || len(e.table.path) < len(parent) {
			found = e
		}
	}
	return found
}

func (d *Doc) members(inline *entry) []*entry {
	var members []*entry
	for _, e := range d.entries {
		if e.inline == inline {
			members = append(members, e)
		}
	}
	return members
}

// blockStart is where a header starts together with the comment lines
// right above it, which belong to it.
func (d *Doc) blockStart(t *table) int {
	at := t.lineStart
	for at > 0 {
		prev := d.lineStart(at - 1)
		line := strings.TrimSpace(string(d.src[prev:at]))
		if !strings.HasPrefix(line, "#") {
			break
		}
		at = prev
	}
	return at
}

// bodyEnd is the start of the line after the last non-blank line of t's
// body (which ends where the next header's block starts).
func (d *Doc) bodyEnd(t *table) int {
	limit := len(d.src)
	for i, other := range d.tables {
		if other == t && i+1 < len(d.tables) {
			limit = d.blockStart(d.tables[i+1])
		}
	}
	at := limit
	for at > t.lineEnd {
		prev := d.lineStart(at - 1)
		if strings.TrimSpace(string(d.src[prev:at])) != "" {
			break
		}
		at = prev
	}
	if at < t.lineEnd {
		at = t.lineEnd
	}
	return at
}

// headerIndent is the indentation for a new header of the given depth,
// taken from a nearby header and the document's indent per level.
func (d *Doc) headerIndent(ref *table, depth int) string {
	unit := d.headerUnit()
	indent := ref.indent
	if unit == "" {
		return indent
	}
	levels := depth - len(ref.path)
	if levels >= 0 {
		return indent + strings.Repeat(unit, levels)
	}
	trim := min(len(indent), -levels*len(unit))
	return indent[:len(indent)-trim]
}

// headerUnit is how much deeper a sub-table's header is indented per level,
// as the document does it ("" for flat documents): the indent of the first
// header that has an indentation step over the nearest header above it that
// is its parent or ancestor. The ancestor is found through the last header
// seen at each path (not by scanning back), which keeps this linear in the
// number of headers.
func (d *Doc) headerUnit() string {
	last := map[string]int{} // a path (pathKey) -> index of its latest header
	for i, t := range d.tables {
		j := -1
		for n := len(t.path) - 1; n >= 0; n-- {
			if k, ok := last[pathKey(t.path[:n])]; ok && k > j {
				j = k
			}
		}
		last[pathKey(t.path)] = i
		if j < 0 {
			continue
		}
		p := d.tables[j]
		if strings.HasPrefix(t.indent, p.indent) && len(t.indent) > len(p.indent) {
			delta := t.indent[len(p.indent):]
			if levels := len(t.path) - len(p.path); len(delta)%levels == 0 {
				return delta[:len(delta)/levels]
			}
		}
	}
	return ""
}

// pathKey is a key path as one map key.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// kvIndent is how much deeper than its header a table's keys are indented,
// as the document does it.
func (d *Doc) kvIndent() string {
	for _, e := range d.entries {
		if e.table == nil || e.inline != nil {
			continue
		}
		indent := d.lineIndent(e.start)
		if strings.HasPrefix(indent, e.table.indent) {
			return indent[len(e.table.indent):]
		}
		return ""
	}
	return ""
}

// EditError is an edit the document's shape does not allow: a value where
// a table is needed, an array of tables on the way. The Doc is unchanged.
type EditError struct {
	Line, Column int // 1-based position of the key in the way; 0 when unknown
	Msg          string
}

func (e *EditError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func (d *Doc) errorAt(path []string, format string, args ...any) error {
	err := &EditError{Msg: fmt.Sprintf(format, args...)}
	if e := d.entryAt(path); e != nil {
		err.Line = d.line(e.start)
		err.Column = utf8.RuneCount(d.src[d.lineStart(e.start):e.start]) + 1
	}
	return err
}

func indexOf(list []*entry, e *entry) int {
	for i, x := range list {
		if x == e {
			return i
		}
	}
	return -1
}

package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonDoc is a JSON object (daemon.json) edited in place: members are
// replaced, added after the last member of their object with its
// indentation, or removed with their comma; every other byte stays. After
// each edit the text is parsed again.
type jsonDoc struct {
	src  []byte
	bom  []byte // a UTF-8 byte order mark before src (dockerd skips one), or nil
	root *jsonValue
	nl   string
}

type jsonValue struct {
	kind       byte // '{', '[', '"', or the first byte of a literal
	start, end int
	members    []*jsonMember // of an object, in order
}

type jsonMember struct {
	key      string
	keyStart int
	value    *jsonValue
}

// jsonSyntaxError is text that is not a JSON object, with its position.
type jsonSyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *jsonSyntaxError) Error() string { return e.Msg }

// parseJSONDoc reads a JSON object; empty (or blank) text is an empty
// object. A UTF-8 byte order mark at the start is set aside and kept, as
// dockerd decodes daemon.json through it (moby daemon/config,
// getConflictFreeConfiguration); UTF-16, which dockerd also reads, is
// refused in words, since edits here are UTF-8.
func parseJSONDoc(src []byte) (*jsonDoc, error) {
	var bom []byte
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		bom, src = []byte("\uFEFF"), src[3:]
	}
	if bytes.HasPrefix(src, []byte{0xFF, 0xFE}) || bytes.HasPrefix(src, []byte{0xFE, 0xFF}) {
		return nil, &jsonSyntaxError{Line: 1, Column: 1, Msg: "the file is UTF-16 (it starts with a UTF-16 byte order mark); gpu-bootstrap edits UTF-8 text: save it as UTF-8"}
	}
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}\n")
	}
	d := &jsonDoc{src: append([]byte(nil), src...), bom: bom}
	if err := d.index(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *jsonDoc) index() error {
	var probe any
	if err := json.Unmarshal(d.src, &probe); err != nil {
		offset := len(d.src)
		var serr *json.SyntaxError
		if errors.As(err, &serr) && serr.Offset < int64(len(d.src)) {
			offset = int(serr.Offset) - 1 // Offset counts the bad byte
		}
		line, col := position(d.src, offset)
		return &jsonSyntaxError{Line: line, Column: col, Msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, ok := probe.(map[string]any); !ok {
		line, col := position(d.src, firstNonSpace(d.src))
		return &jsonSyntaxError{Line: line, Column: col, Msg: "the file must hold a JSON object ({...})"}
	}
	s := jsonScanner{src: d.src}
	d.root = s.value()
	d.nl = "\n"
	if bytes.Contains(d.src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	return nil
}

// bytes is the document's text, with its byte order mark if it had one.
func (d *jsonDoc) bytes() []byte { return append(append([]byte(nil), d.bom...), d.src...) }

// position is the 1-based line and column of a byte offset.
func position(src []byte, offset int) (line, col int) {
	offset = max(0, min(offset, len(src)))
	line = bytes.Count(src[:offset], []byte("\n")) + 1
	col = offset - bytes.LastIndexByte(src[:offset], '\n')
	return line, col
}

func firstNonSpace(src []byte) int {
	return len(src) - len(bytes.TrimLeft(src, " \t\r\n"))
}

// jsonScanner walks text that encoding/json has already accepted.
type jsonScanner struct {
	src []byte
	pos int
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.src) && strings.IndexByte(" \t\r\n", s.src[s.pos]) >= 0 {
		s.pos++
	}
}

func (s *jsonScanner) value() *jsonValue {
	s.skipSpace()
	v := &jsonValue{kind: s.src[s.pos], start: s.pos}
	switch v.kind {
	case '{', '[':
		closing := byte('}')
		if v.kind == '[' {
			closing = ']'
		}
		s.pos++
		for {
			s.skipSpace()
			if s.src[s.pos] == closing {
				s.pos++
				break
			}
			if s.src[s.pos] == ',' {
				s.pos++
				continue
			}
			if v.kind == '[' {
				s.value()
				continue
			}
			m := &jsonMember{keyStart: s.pos}
			m.key = s.str()
			s.skipSpace()
			s.pos++ // ':'
			m.value = s.value()
			v.members = append(v.members, m)
		}
	case '"':
		s.str()
	default:
		for s.pos < len(s.src) && strings.IndexByte(",]} \t\r\n", s.src[s.pos]) < 0 {
			s.pos++
		}
	}
	v.end = s.pos
	return v
}

func (s *jsonScanner) str() string {
	start := s.pos
	s.pos++
	for s.src[s.pos] != '"' {
		if s.src[s.pos] == '\\' {
			s.pos++
		}
		s.pos++
	}
	s.pos++
	var out string
	_ = json.Unmarshal(s.src[start:s.pos], &out)
	return out
}

// get is the value at a path of object keys (the last of duplicate keys,
// as encoding/json reads them); nil when missing.
func (d *jsonDoc) get(path ...string) *jsonValue {
	v := d.root
	for _, key := range path {
		if v == nil || v.kind != '{' {
			return nil
		}
		var next *jsonValue
		for _, m := range v.members {
			if m.key == key {
				next = m.value
			}
		}
		v = next
	}
	return v
}

// decode is the Go value at a path (nil when missing).
func (d *jsonDoc) decode(path ...string) any {
	v := d.get(path...)
	if v == nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(d.src[v.start:v.end], &out)
	return out
}

// set makes the member at path hold value; its parent object must exist.
// value is a string, bool, []string or a jsonObject.
func (d *jsonDoc) set(path []string, value any) error {
	parent := d.get(path[:len(path)-1]...)
	if parent == nil || parent.kind != '{' {
		return fmt.Errorf("internal: %s is not an object", strings.Join(path[:len(path)-1], "."))
	}
	key := path[len(path)-1]
	if cur := d.get(path...); cur != nil {
		return d.splice(cur.start, cur.end, d.render(value, d.lineIndent(cur.start), d.multiline(parent)))
	}
	if len(parent.members) == 0 {
		outer := d.lineIndent(parent.start)
		inner := outer + d.indentUnit()
		text := "{" + d.nl + inner + jsonString(key) + ": " + d.render(value, inner, true) + d.nl + outer + "}"
		return d.splice(parent.start, parent.end, text)
	}
	last := parent.members[len(parent.members)-1]
	if !d.multiline(parent) {
		return d.splice(last.value.end, last.value.end, ", "+jsonString(key)+": "+d.render(value, "", false))
	}
	indent := d.lineIndent(last.keyStart)
	text := "," + d.nl + indent + jsonString(key) + ": " + d.render(value, indent, true)
	return d.splice(last.value.end, last.value.end, text)
}

// remove deletes the member at path with the comma that separated it.
func (d *jsonDoc) remove(path []string) error {
	parent := d.get(path[:len(path)-1]...)
	key := path[len(path)-1]
	if parent == nil {
		return nil
	}
	for i := len(parent.members) - 1; i >= 0; i-- {
		m := parent.members[i]
		if m.key != key {
			continue
		}
		switch {
		case len(parent.members) == 1:
			return d.splice(parent.start, parent.end, "{}")
		case i > 0:
			return d.splice(parent.members[i-1].value.end, m.value.end, "")
		default:
			return d.splice(m.keyStart, parent.members[1].keyStart, "")
		}
	}
	return nil
}

func (d *jsonDoc) splice(start, end int, text string) error {
	old := d.src
	d.src = append(append(append([]byte(nil), old[:start]...), text...), old[end:]...)
	if err := d.index(); err != nil {
		d.src = old
		_ = d.index()
		return fmt.Errorf("internal: the edit would break the JSON (%v)", err)
	}
	return nil
}

// multiline reports whether an object puts its members on lines of their
// own.
func (d *jsonDoc) multiline(obj *jsonValue) bool {
	if len(obj.members) == 0 {
		return true
	}
	return bytes.Contains(d.src[obj.start:obj.members[0].keyStart], []byte("\n"))
}

// indentUnit is the file's indentation step, from its first member; four
// spaces (what nvidia-ctk and json.MarshalIndent callers write) when the
// file has none to go by.
func (d *jsonDoc) indentUnit() string {
	if len(d.root.members) > 0 && d.multiline(d.root) {
		if indent := d.lineIndent(d.root.members[0].keyStart); indent != "" {
			return indent
		}
	}
	return "    "
}

func (d *jsonDoc) lineIndent(pos int) string {
	start := bytes.LastIndexByte(d.src[:pos], '\n') + 1
	end := start
	for end < len(d.src) && (d.src[end] == ' ' || d.src[end] == '\t') {
		end++
	}
	return string(d.src[start:end])
}

// jsonObject is an object to write with its keys in this order.
type jsonObject []jsonField

type jsonField struct {
	key   string
	value any
}

// render writes a value; objects span lines (indented from indent) when
// multiline, arrays stay on one line.
func (d *jsonDoc) render(value any, indent string, multiline bool) string {
	switch v := value.(type) {
	case jsonObject:
		if len(v) == 0 {
			return "{}"
		}
		var b strings.Builder
		b.WriteString("{")
		inner := indent + d.indentUnit()
		for i, f := range v {
			if i > 0 {
				b.WriteString(",")
				if !multiline {
					b.WriteString(" ")
				}
			}
			if multiline {
				b.WriteString(d.nl + inner)
			}
			b.WriteString(jsonString(f.key) + ": " + d.render(f.value, inner, multiline))
		}
		if multiline {
			b.WriteString(d.nl + indent)
		}
		b.WriteString("}")
		return b.String()
	case []string:
		quoted := make([]string, len(v))
		for i, s := range v {
			quoted[i] = jsonString(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	case string:
		return jsonString(v)
	}
	data, _ := json.Marshal(value)
	return string(data)
}

// jsonString quotes s without escaping <, > and & (json.Marshal's HTML
// escaping would turn paths with & into \u0026).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

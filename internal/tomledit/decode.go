package tomledit

// decode.go builds a document's decoded values in time linear in its size.
// go-toml's toml.Unmarshal of the whole document checks keys with a linear
// scan per key (see seen.go), so it is used here only for what is linear in
// it: every value of the document is decoded in one call, as the elements of
// one array, and the key structure is checked by seenTracker and assembled
// here. Errors read as go-toml's: the same messages, at the same line and
// column (the key of a key error, the highlight of a syntax error, the place
// in the value of a value error), and the first one in the order go-toml
// meets them — TestDecodeMatchesGoTOML compares both on every toml-test
// document.

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// assignment is one top-level key = value: its key, relative to the header
// above it, and the value's text.
type assignment struct {
	key []string
	at  int // offset of the value in the document
	raw []byte
}

// decodeValues decodes the values' texts as go-toml does, in one call. An
// error is placed in the document, in the value it is about.
func (d *Doc) decodeValues(as []assignment) ([]any, error) {
	if len(as) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteString("v = [\n")
	starts := make([]int, len(as)) // where each value starts in b
	for i, a := range as {
		starts[i] = b.Len()
		b.Write(a.raw)
		b.WriteString(",\n")
	}
	b.WriteString("]\n")
	var out struct {
		V []any `toml:"v"`
	}
	if err := toml.Unmarshal(b.Bytes(), &out); err != nil {
		var derr *toml.DecodeError
		if !errors.As(err, &derr) {
			return nil, &SyntaxError{Msg: err.Error()}
		}
		line, col := derr.Position()
		at := offsetOf(b.Bytes(), line, col)
		i := max(sort.SearchInts(starts, at+1)-1, 0)
		at = as[i].at + min(at-starts[i], len(as[i].raw))
		if at == len(d.src) && at > 0 {
			at-- // go-toml points at the last byte of a value that ends the document
		}
		return nil, d.errorAtOffset(at, derr.Error())
	}
	if len(out.V) != len(as) {
		return nil, fmt.Errorf("tomledit: decoded %d values out of %d", len(out.V), len(as))
	}
	return out.V, nil
}

// build assembles the decoded document from its headers and assignments in
// document order.
func build(order []any, values []any) (map[string]any, error) {
	root := map[string]any{}
	current := root
	n := 0
	for _, item := range order {
		switch it := item.(type) {
		case *table:
			m, err := openTable(root, it.path, it.array)
			if err != nil {
				return nil, err
			}
			current = m
		case assignment:
			m := current
			for _, k := range it.key[:len(it.key)-1] {
				next, ok := m[k].(map[string]any)
				if !ok {
					if _, exists := m[k]; exists {
						return nil, fmt.Errorf("tomledit: %s is not a table", k)
					}
					next = map[string]any{}
					m[k] = next
				}
				m = next
			}
			m[it.key[len(it.key)-1]] = values[n]
			n++
		}
	}
	return root, nil
}

// openTable finds or makes the table a header names; an array of tables on
// the way stands for its last element.
func openTable(root map[string]any, path []string, array bool) (map[string]any, error) {
	m := root
	for i, k := range path {
		last := i == len(path)-1
		if last && array {
			list, _ := m[k].([]any)
			elem := map[string]any{}
			m[k] = append(list, elem)
			return elem, nil
		}
		switch v := m[k].(type) {
		case nil:
			next := map[string]any{}
			m[k] = next
			m = next
		case map[string]any:
			m = v
		case []any:
			if len(v) == 0 {
				return nil, fmt.Errorf("tomledit: %s is an empty array", k)
			}
			elem, ok := v[len(v)-1].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("tomledit: %s is not an array of tables", k)
			}
			m = elem
		default:
			return nil, fmt.Errorf("tomledit: %s is not a table", k)
		}
	}
	return m, nil
}

// keyError is a seenTracker error at expression n, placed at its key as
// go-toml places it.
func (d *Doc) keyError(n *unstable.Node, err error) error {
	it := n.Key()
	if !it.Next() {
		return &SyntaxError{Msg: err.Error()}
	}
	return d.errorAtOffset(int(it.Node().Raw.Offset), err.Error())
}

// parserError is an unstable.Parser error, placed at its highlight.
func (d *Doc) parserError(err error) error {
	var perr *unstable.ParserError
	if !errors.As(err, &perr) {
		return &SyntaxError{Msg: "toml: " + err.Error()}
	}
	at := cap(d.src) - cap(perr.Highlight)
	if perr.Highlight == nil || at < 0 || at > len(d.src) {
		return &SyntaxError{Msg: "toml: " + perr.Message}
	}
	return d.errorAtOffset(at, "toml: "+perr.Message)
}

// errorAtOffset is a SyntaxError at byte offset at: 1-based line, and the
// 1-based column in bytes, as go-toml counts them.
func (d *Doc) errorAtOffset(at int, msg string) error {
	lineStart := bytes.LastIndexByte(d.src[:at], '\n') + 1
	return &SyntaxError{Line: bytes.Count(d.src[:at], []byte("\n")) + 1, Column: at - lineStart + 1, Msg: msg}
}

// offsetOf is the byte offset of a 1-based line and column in src.
func offsetOf(src []byte, line, col int) int {
	at := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(src[at:], '\n')
		if i < 0 {
			return len(src)
		}
		at += i + 1
	}
	return min(at+col-1, len(src))
}

// keyParts is the parts of a key node.
func keyParts(n *unstable.Node) []string {
	var parts []string
	it := n.Key()
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

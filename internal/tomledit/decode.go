package tomledit

// decode.go builds a document's decoded values in time linear in its size.
// go-toml's toml.Unmarshal of the whole document checks keys with a linear
// scan per key (see seen.go), so it is used here only for what is linear in
// it: every value of the document is decoded in one call, as the elements of
// one array, and the key structure is checked by seenTracker and assembled
// here. A document that fails either check is handed to toml.Unmarshal as a
// whole, so its error (message, line, column) is go-toml's own.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// assignment is one top-level key = value: its key, relative to the header
// above it, and the value's text.
type assignment struct {
	key []string
	raw []byte
}

// decodeValues decodes the values' texts as go-toml does, in one call.
func decodeValues(as []assignment) ([]any, error) {
	if len(as) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("v = [\n")
	for _, a := range as {
		b.Write(a.raw)
		b.WriteString(",\n")
	}
	b.WriteString("]\n")
	var out struct {
		V []any `toml:"v"`
	}
	if err := toml.Unmarshal([]byte(b.String()), &out); err != nil {
		return nil, err
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

// wholeDocumentError is go-toml's verdict on the whole document, for a
// document this package found invalid: go-toml words the error and places
// it. ours is used when go-toml accepts what the checks here refused.
func wholeDocumentError(src []byte, ours error) error {
	var root map[string]any
	err := toml.Unmarshal(src, &root)
	if err == nil {
		return &SyntaxError{Msg: ours.Error()}
	}
	var derr *toml.DecodeError
	if errors.As(err, &derr) {
		line, col := derr.Position()
		return &SyntaxError{Line: line, Column: col, Msg: derr.Error()}
	}
	return &SyntaxError{Msg: err.Error()}
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

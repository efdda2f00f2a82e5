package tomledit

// seen.go checks a document's keys the way go-toml/v2's decoder does
// (internal/tracker.SeenTracker in v2.4.3: duplicate keys, a [table] defined
// twice or over a dotted key, a value where a table is needed, inline tables
// closed), with one difference: it finds a key's entry through a hash index
// instead of go-toml's linear scan over every entry recorded after the
// parent, which made checking a document quadratic in its number of tables
// and keys (20,000 runtime tables took seconds). go-toml's own fix
// (pelletier/go-toml#1100, the same idea) is not in a release yet. The
// rules, and the order they are tried in, are go-toml's; equivalence is
// pinned by TestDecodeMatchesGoTOML.

import (
	"fmt"

	"github.com/pelletier/go-toml/v2/unstable"
)

type seenKind uint8

const (
	seenValue      seenKind = iota + 1 // a scalar, array or inline table: closed
	seenKVTable                        // a table made by a dotted key
	seenTable                          // a table made by a [header] or on the way to one
	seenArrayTable                     // [[header]]
	seenAnonymous                      // an inline table or array inside an array
)

func (k seenKind) String() string {
	switch k {
	case seenValue:
		return "value"
	case seenKVTable:
		return "kv-table"
	case seenTable:
		return "table"
	case seenArrayTable:
		return "array-table"
	}
	return "anonymous"
}

type seenEntry struct {
	kind     seenKind
	explicit bool // a [table] that its own header defined
}

type seenKey struct {
	parent int32
	name   string
}

// seenTracker is go-toml's SeenTracker with an index. An element of an array
// of tables gets a fresh id, so what the previous element defined can no
// longer be found under it (go-toml deletes those entries instead).
type seenTracker struct {
	entries []seenEntry
	index   map[seenKey]int32
	current int32
}

func newSeenTracker() *seenTracker {
	return &seenTracker{entries: []seenEntry{{kind: seenTable}}, index: map[seenKey]int32{}}
}

func (s *seenTracker) find(parent int32, name []byte) int32 {
	if i, ok := s.index[seenKey{parent, string(name)}]; ok {
		return i
	}
	return -1
}

func (s *seenTracker) create(parent int32, name []byte, kind seenKind, explicit bool) int32 {
	id := int32(len(s.entries)) //nolint:gosec // entries are bounded by the document's size
	s.entries = append(s.entries, seenEntry{kind: kind, explicit: explicit})
	if kind != seenAnonymous {
		s.index[seenKey{parent, string(name)}] = id
	}
	return id
}

// check takes one top-level expression, as go-toml's CheckExpression.
func (s *seenTracker) check(n *unstable.Node) error {
	switch n.Kind {
	case unstable.KeyValue:
		return s.checkKeyValue(s.current, n)
	case unstable.Table, unstable.ArrayTable:
		return s.checkTable(n, n.Kind == unstable.ArrayTable)
	}
	return fmt.Errorf("toml: unexpected expression kind %s", n.Kind)
}

func (s *seenTracker) checkTable(n *unstable.Node, array bool) error {
	parent := int32(0)
	it := n.Key()
	for it.Next() {
		name := it.Node().Data
		i := s.find(parent, name)
		if it.IsLast() {
			return s.checkLast(parent, i, name, array)
		}
		if i < 0 {
			i = s.create(parent, name, seenTable, false)
		} else if k := s.entries[i].kind; k != seenTable && k != seenArrayTable && k != seenKVTable {
			return fmt.Errorf("toml: key %s already exists as a value", name)
		}
		parent = i
	}
	return fmt.Errorf("toml: table expression without key")
}

// checkLast is the last part of a header's key.
func (s *seenTracker) checkLast(parent, i int32, name []byte, array bool) error {
	if i < 0 {
		kind := seenTable
		if array {
			kind = seenArrayTable
		}
		s.current = s.create(parent, name, kind, true)
		return nil
	}
	e := &s.entries[i]
	if array {
		if e.kind != seenArrayTable {
			return fmt.Errorf("toml: key %s already exists as a %s, but should be an array table", name, e.kind)
		}
		// A new element: what the previous one defined is not visible.
		s.current = s.create(parent, name, seenArrayTable, true)
		return nil
	}
	switch e.kind {
	case seenTable:
		if e.explicit {
			return fmt.Errorf("toml: table %s already exists", name)
		}
		e.explicit = true
		s.current = i
		return nil
	case seenKVTable:
		return fmt.Errorf("toml: table %s already exists as defined by a dotted key", name)
	case seenArrayTable:
		return fmt.Errorf("toml: table %s already exists as an array of tables", name)
	}
	return fmt.Errorf("toml: key %s should be a table, not a %s", name, e.kind)
}

func (s *seenTracker) checkKeyValue(parent int32, n *unstable.Node) error {
	it := n.Key()
	for it.Next() {
		name := it.Node().Data
		i := s.find(parent, name)
		if it.IsLast() {
			if i >= 0 {
				return fmt.Errorf("toml: key %s is already defined", name)
			}
			return s.checkValue(s.create(parent, name, seenValue, false), n.Value())
		}
		if i < 0 {
			i = s.create(parent, name, seenKVTable, false)
		} else if s.entries[i].kind != seenKVTable {
			return fmt.Errorf("toml: key %s is already defined", name)
		}
		parent = i
	}
	return fmt.Errorf("toml: key-value expression without key")
}

// checkValue checks inline tables for duplicate keys, also inside arrays.
func (s *seenTracker) checkValue(id int32, v *unstable.Node) error {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if err := s.checkKeyValue(id, it.Node()); err != nil {
				return err
			}
		}
	case unstable.Array:
		it := v.Children()
		for it.Next() {
			el := it.Node()
			if el.Kind == unstable.InlineTable || el.Kind == unstable.Array {
				if err := s.checkValue(s.create(id, nil, seenAnonymous, false), el); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

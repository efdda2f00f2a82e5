package tomledit

import "unicode/utf8"

// Position is where the value of the key at path starts: 1-based line and
// column (in characters), for errors that point the user at a value the
// document holds but its reader cannot use. ok is false when no key/value
// at path is written in the document (a table header, or absent).
func (d *Doc) Position(path ...string) (line, column int, ok bool) {
	e := d.entryAt(path)
	if e == nil {
		return 0, 0, false
	}
	start := d.lineStart(e.valStart)
	return d.line(e.valStart), utf8.RuneCount(d.src[start:e.valStart]) + 1, true
}

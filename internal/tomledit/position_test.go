package tomledit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestByteOrderMarkIsKeptNotParsed: a config saved by an editor that writes
// a UTF-8 byte order mark parses (as containerd 1.x's and CRI-O's TOML
// readers do), edits keep the mark, and positions count from after it.
func TestByteOrderMarkIsKeptNotParsed(t *testing.T) {
	src := "\uFEFFversion = 2\r\n\r\n[plugins]\r\n"
	d, err := Parse([]byte(src))
	require.NoError(t, err)
	v, ok := d.Get("version")
	require.True(t, ok)
	require.Equal(t, int64(2), v)

	changed, err := d.Set([]string{"plugins", "x"}, "y")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "\uFEFFversion = 2\r\n\r\n[plugins]\r\nx = \"y\"\r\n", string(d.Bytes()))

	line, column, ok := d.Position("version")
	require.True(t, ok)
	require.Equal(t, []int{1, 11}, []int{line, column})

	untouched, err := Parse([]byte(src))
	require.NoError(t, err)
	require.Equal(t, src, string(untouched.Bytes()), "a document read and not edited is the same bytes")
}

// TestPositionNamesTheValue: the line and column (in characters) of a key's
// value, in a table, a dotted key and an inline table; none for a table
// header or a missing key.
func TestPositionNamesTheValue(t *testing.T) {
	d, err := Parse([]byte("# é\nversion = \"2\"\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  a.b = 1\n  c = { \"é\" = true, d = 3 }\n"))
	require.NoError(t, err)
	for _, tc := range []struct {
		path         []string
		line, column int
	}{
		{[]string{"version"}, 2, 11},
		{[]string{"plugins", "io.containerd.grpc.v1.cri", "a", "b"}, 4, 9},
		{[]string{"plugins", "io.containerd.grpc.v1.cri", "c", "d"}, 5, 25},
	} {
		line, column, ok := d.Position(tc.path...)
		require.True(t, ok, "%v", tc.path)
		require.Equal(t, []int{tc.line, tc.column}, []int{line, column}, "%v", tc.path)
	}
	_, _, ok := d.Position("plugins")
	require.False(t, ok, "a table header has no value")
	_, _, ok = d.Position("nothing")
	require.False(t, ok)
}

// TestEditErrorNamesLineAndColumn: an edit the document's shape refuses
// points at the key in the way.
func TestEditErrorNamesLineAndColumn(t *testing.T) {
	d, err := Parse([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n    runtimes = \"runc\"\n"))
	require.NoError(t, err)
	_, err = d.Set([]string{"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "nvidia", "runtime_type"}, "io.containerd.runc.v2")
	var eerr *EditError
	require.ErrorAs(t, err, &eerr)
	require.Equal(t, []int{3, 5}, []int{eerr.Line, eerr.Column}, err.Error())
}

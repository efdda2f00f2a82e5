package tomledit

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type edit func(d *Doc) (bool, error)

func set(value any, path ...string) edit {
	return func(d *Doc) (bool, error) { return d.Set(path, value) }
}

func setRaw(raw string, path ...string) edit {
	return func(d *Doc) (bool, error) { return d.SetRaw(path, raw) }
}

func del(path ...string) edit {
	return func(d *Doc) (bool, error) { return d.Delete(path) }
}

func appendString(s string, path ...string) edit {
	return func(d *Doc) (bool, error) { return d.AppendString(path, s) }
}

func TestEdits(t *testing.T) {
	tests := []struct {
		description string
		in          string
		edits       []edit
		want        string
	}{
		{
			description: "A value that is already there changes nothing, not even its quoting.",
			in:          "[a]\nk = 'x' # keep\n",
			edits:       []edit{set("x", "a", "k")},
			want:        "[a]\nk = 'x' # keep\n",
		},
		{
			description: "A changed value is replaced where it stands; its comment stays.",
			in:          "[a]\nk = \"x\" # keep\nl = 1\n",
			edits:       []edit{set("y", "a", "k")},
			want:        "[a]\nk = \"y\" # keep\nl = 1\n",
		},
		{
			description: "A new key goes after the last key of its table, with the same indent, before a commented-out block.",
			in:          "[a]\n  k = 1\n  # l = 2\n\n[b]\n",
			edits:       []edit{set(true, "a", "m")},
			want:        "[a]\n  k = 1\n  m = true\n  # l = 2\n\n[b]\n",
		},
		{
			description: "A new root key goes after the last root key, before the tables.",
			in:          "# header\nversion = 2\n\n[a]\nk = 1\n",
			edits:       []edit{set([]string{"/etc/x/*.toml"}, "imports")},
			want:        "# header\nversion = 2\nimports = [\"/etc/x/*.toml\"]\n\n[a]\nk = 1\n",
		},
		{
			description: "A root key in a document without root keys goes before the first table and its comment.",
			in:          "# about a\n[a]\nk = 1\n",
			edits:       []edit{set(int64(2), "version")},
			want:        "version = 2\n\n# about a\n[a]\nk = 1\n",
		},
		{
			description: "An empty document gets plain lines.",
			in:          "",
			edits:       []edit{set(int64(2), "version"), set("io.containerd.runc.v2", "plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "nvidia", "runtime_type")},
			want:        "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\nruntime_type = \"io.containerd.runc.v2\"\n",
		},
		{
			description: "A new table follows its siblings and their sub-tables, before the next unrelated table's comment.",
			in: "[p.runtimes.runc]\n  type = \"r\"\n  [p.runtimes.runc.options]\n    S = true\n\n" +
				"# registry\n[p.registry]\n  x = 1\n",
			edits: []edit{set("/bin/n", "p", "runtimes", "nvidia", "options", "BinaryName"), set("t", "p", "runtimes", "nvidia", "type")},
			want: "[p.runtimes.runc]\n  type = \"r\"\n  [p.runtimes.runc.options]\n    S = true\n\n" +
				"[p.runtimes.nvidia]\n  type = \"t\"\n\n" +
				"  [p.runtimes.nvidia.options]\n    BinaryName = \"/bin/n\"\n\n" +
				"# registry\n[p.registry]\n  x = 1\n",
		},
		{
			description: "Headers indented per level, as `containerd config default` writes them, get the same indent.",
			in: "[plugins]\n  [plugins.cri]\n    [plugins.cri.containerd]\n      snapshotter = \"overlayfs\"\n" +
				"      [plugins.cri.containerd.runtimes.runc]\n        runtime_type = \"io.containerd.runc.v2\"\n",
			edits: []edit{set("n", "plugins", "cri", "containerd", "runtimes", "nvidia", "runtime_type")},
			want: "[plugins]\n  [plugins.cri]\n    [plugins.cri.containerd]\n      snapshotter = \"overlayfs\"\n" +
				"      [plugins.cri.containerd.runtimes.runc]\n        runtime_type = \"io.containerd.runc.v2\"\n" +
				"\n      [plugins.cri.containerd.runtimes.nvidia]\n        runtime_type = \"n\"\n",
		},
		{
			description: "A parent table that only exists through its sub-tables is declared right before them.",
			in:          "version = 2\n\n# cri\n[p.cri.containerd]\nsnapshotter = \"o\"\n",
			edits:       []edit{set(true, "p", "cri", "enable_cdi")},
			want:        "version = 2\n\n[p.cri]\nenable_cdi = true\n\n# cri\n[p.cri.containerd]\nsnapshotter = \"o\"\n",
		},
		{
			description: "A table defined by dotted keys grows by dotted keys next to them.",
			in:          "[r.runc]\noptions.SystemdCgroup = true\nx = 1\n",
			edits:       []edit{set("/b", "r", "runc", "options", "BinaryName")},
			want:        "[r.runc]\noptions.SystemdCgroup = true\noptions.BinaryName = \"/b\"\nx = 1\n",
		},
		{
			description: "An inline table grows inside its braces.",
			in:          "[r.runc]\noptions = { SystemdCgroup = true } # inline\n",
			edits:       []edit{set("/b", "r", "runc", "options", "BinaryName")},
			want:        "[r.runc]\noptions = { SystemdCgroup = true, BinaryName = \"/b\" } # inline\n",
		},
		{
			description: "Raw values are copied as written.",
			in:          "[a]\n",
			edits:       []edit{setRaw("[ 'x',  \"y\" ]", "a", "list"), setRaw("'lit'", "a", "s")},
			want:        "[a]\nlist = [ 'x',  \"y\" ]\ns = 'lit'\n",
		},
		{
			description: "Delete removes the key's whole line and nothing else.",
			in:          "[a]\n  k = \"nvidia\" # default\n  l = 1\n",
			edits:       []edit{del("a", "k"), del("a", "missing")},
			want:        "[a]\n  l = 1\n",
		},
		{
			description: "Delete inside an inline table keeps the other members.",
			in:          "a = { x = 1, y = 2, z = 3 }\n",
			edits:       []edit{del("a", "y"), del("a", "x")},
			want:        "a = { z = 3 }\n",
		},
		{
			description: "AppendString keeps a one-line array on one line and skips what is there.",
			in:          "imports = [\"/a/*.toml\"]\n",
			edits:       []edit{appendString("/a/*.toml", "imports"), appendString("/etc/containerd/conf.d/*.toml", "imports")},
			want:        "imports = [\"/a/*.toml\", \"/etc/containerd/conf.d/*.toml\"]\n",
		},
		{
			description: "AppendString gives a multi-line array a new line.",
			in:          "imports = [\n  \"/a/*.toml\", # a\n]\n",
			edits:       []edit{appendString("/b/*.toml", "imports")},
			want:        "imports = [\n  \"/a/*.toml\",\n  \"/b/*.toml\", # a\n]\n",
		},
		{
			description: "AppendString fills an empty array.",
			in:          "imports = []\n",
			edits:       []edit{appendString("/b", "imports")},
			want:        "imports = [\"/b\"]\n",
		},
		{
			description: "CRLF documents get CRLF lines, and a last line without a line break gets one.",
			in:          "[a]\r\nk = 1",
			edits:       []edit{set(int64(2), "a", "l"), set("x", "b", "c")},
			want:        "[a]\r\nk = 1\r\nl = 2\r\n\r\n[b]\r\nc = \"x\"\r\n",
		},
		{
			description: "Tables are found by their decoded names, however the header quotes and spaces them.",
			in:          "[plugins.'io.containerd.grpc.v1.cri']\nx = 1\n[ plugins . \"b\" ]\n",
			edits:       []edit{set(true, "plugins", "io.containerd.grpc.v1.cri", "enable_cdi"), set(int64(1), "plugins", "b", "y")},
			want:        "[plugins.'io.containerd.grpc.v1.cri']\nx = 1\nenable_cdi = true\n[ plugins . \"b\" ]\ny = 1\n",
		},
		{
			description: "Strings are escaped as TOML basic strings.",
			in:          "",
			edits:       []edit{set("a\"b\\c\td\x01", "k")},
			want:        "k = \"a\\\"b\\\\c\\td\\u0001\"\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			d, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			for _, e := range tc.edits {
				_, err := e(d)
				require.NoError(t, err)
			}
			require.Equal(t, tc.want, string(d.Bytes()))
			_, err = Parse(d.Bytes())
			require.NoError(t, err, "the result must parse")
		})
	}
}

func TestSetReportsChange(t *testing.T) {
	d, err := Parse([]byte("[a]\nk = 1\n"))
	require.NoError(t, err)
	changed, err := d.Set([]string{"a", "k"}, 1)
	require.NoError(t, err)
	require.False(t, changed, "1 equals 1")
	changed, err = d.Set([]string{"a", "k"}, 2)
	require.NoError(t, err)
	require.True(t, changed)
	v, ok := d.Get("a", "k")
	require.True(t, ok)
	require.Equal(t, int64(2), v)
}

func TestConflictsAreRefused(t *testing.T) {
	tests := []struct {
		description string
		in          string
		path        []string
		want        string
	}{
		{"A value where a table is needed.", "[a]\nb = \"x\"\n", []string{"a", "b", "c"}, "line 2: a.b is a string, not a table"},
		{"A table where a value is needed.", "[a.b]\nc = 1\n", []string{"a", "b"}, "a.b is a table, not a value"},
		{"An array of tables on the way.", "[[a]]\nb = 1\n", []string{"a", "c"}, "a is an array, not a table"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			d, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			_, err = d.Set(tc.path, "v")
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, tc.in, string(d.Bytes()), "a refused edit changes nothing")
		})
	}
}

func TestSyntaxErrorsHaveAPosition(t *testing.T) {
	tests := []struct {
		description string
		in          string
		line        int
	}{
		{"A missing value.", "[a]\nb = \n", 2},
		{"An unterminated header.", "version = 2\n\n[plugins\n", 3},
		{"A key defined twice.", "[a]\nb = 1\nb = 2\n", 3},
		{"A table defined twice.", "[a]\n[b]\n[a]\n", 3},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			var serr *SyntaxError
			require.True(t, errors.As(err, &serr), "got %v", err)
			require.Equal(t, tc.line, serr.Line)
			require.Positive(t, serr.Column)
			require.False(t, strings.Contains(serr.Msg, "\n"), "one line: %q", serr.Msg)
		})
	}
}

func TestLeaves(t *testing.T) {
	d, err := Parse([]byte(`[r.runc]
runtime_type = "io.containerd.runc.v2"
options = { SystemdCgroup = true }
[r.runc.extra]
list = ['a']
[r.other]
x = 1
`))
	require.NoError(t, err)
	require.Equal(t, []Leaf{
		{Path: []string{"runtime_type"}, Raw: `"io.containerd.runc.v2"`},
		{Path: []string{"options", "SystemdCgroup"}, Raw: "true"},
		{Path: []string{"extra", "list"}, Raw: "['a']"},
	}, d.Leaves("r", "runc"))
}

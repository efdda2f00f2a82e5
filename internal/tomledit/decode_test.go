package tomledit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
)

// tomlTestCases are the inputs of toml-test v2.1.0
// (github.com/toml-lang/toml-test), as go-toml v2.4.3 embeds them in
// toml_testgen_test.go: 200 valid documents and 466 invalid ones, a quarter
// of them about keys and tables. Extracted with go/parser into
// testdata/toml-test-v2.1.0.json.
func tomlTestCases(t *testing.T) []struct{ Name, Input string } {
	data, err := os.ReadFile("testdata/toml-test-v2.1.0.json")
	require.NoError(t, err)
	var cases []struct{ Name, Input string }
	require.NoError(t, json.Unmarshal(data, &cases))
	require.Len(t, cases, 666)
	return cases
}

// TestDecodeMatchesGoTOML pins the linear decoder (seen.go, decode.go) to
// go-toml's toml.Unmarshal, which it replaces for speed: on every toml-test
// document, on the engine configs of internal/bootstrap's tests and on
// hand-made cases about the key rules, both accept and reject the same
// documents, decode accepted ones to the same values, and a rejected one
// carries go-toml's own message and position (and, with several errors, the
// one go-toml reports first).
func TestDecodeMatchesGoTOML(t *testing.T) {
	docs := map[string]string{}
	for _, c := range tomlTestCases(t) {
		docs[c.Name] = c.Input
	}
	err := filepath.WalkDir("../bootstrap/testdata", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".toml" && ext != ".conf" && ext != ".tmpl" {
			return nil
		}
		data, err := os.ReadFile(path)
		docs[path] = string(data)
		return err
	})
	require.NoError(t, err)
	for name, doc := range map[string]string{
		"array table elements are separate":      "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n[a.d]\ne = 3\n",
		"array table element redefines a key":    "[[a]]\nb = 1\nb = 2\n",
		"sub-table of an array table twice":      "[[a]]\n[a.b]\n[[a]]\n[a.b]\n[a.b]\n",
		"header over dotted key":                 "[a]\nb.c = 1\n[a.b]\n",
		"header below dotted key":                "[a]\nb.c = 1\n[a.b.d]\ne = 1\n",
		"dotted key into header table":           "[a.b]\nc = 1\n[a]\nb.d = 2\n",
		"implicit then explicit":                 "[a.b.c]\n[a]\nx = 1\n[a.b]\ny = 2\n",
		"explicit twice":                         "[a]\n[b]\n[a]\n",
		"table over array table":                 "[[a]]\n[a]\n",
		"array table over table":                 "[a]\n[[a]]\n",
		"value then table":                       "a = 1\n[a.b]\n",
		"inline table closed":                    "a = {b = 1}\n[a.c]\n",
		"inline table closed to dotted keys":     "a = {b = 1}\na.c = 2\n",
		"inline duplicate":                       "a = {b = 1, b = 2}\n",
		"inline tables in arrays":                "a = [{b = 1}, {b = 2}, [{c = {d = 1}}]]\n",
		"inline duplicate inside array":          "a = [{b = 1, b = 2}]\n",
		"quoted and bare keys are the same":      "a = 1\n\"a\" = 2\n",
		"empty key":                              "\"\" = 1\n[\"\"]\n",
		"many siblings":                          strings.Repeat("[t.x]\n", 1) + "[t.y]\n[t.x.z]\n[t.y]\n",
		"values of every kind":                   "s = 'x'\nm = \"\"\"\na\\\n  b\"\"\"\ni = 0x_ff\nf = 1e3\nb = true\nd = 1979-05-27\nt = 07:32:00\ndt = 1979-05-27T07:32:00Z\nl = 1979-05-27T07:32:00\na = [1, 'x', [2], {k = 1}] # c\n",
		"multi-line array with comments":         "a = [\n  1, # one\n  2,\n]\n",
		"bad integer the parser lets through":    "a = 0123\n",
		"integer overflow":                       "a = 9223372036854775808\n",
		"bad value before a duplicate key":       "[t]\na = 0123\nb = 1\nb = 2\n",
		"bad value before a syntax error":        "a = 1979-02-30\nb = = 1\n",
		"bad value in an inline table first":     "x = 1\na = {b = [1, 0x]}\n[a]\n",
		"duplicate key before a bad value":       "b = 1\nb = 2\na = 0123\n",
		"bad date":                               "a = 1979-02-30\n",
		"CRLF":                                   "[a]\r\nb = 1\r\n",
		"array table under array table":          "[[a]]\n[[a.b]]\nc = 1\n[[a.b]]\nc = 2\n[[a]]\n[[a.b]]\nc = 3\n",
		"table under an older array table entry": "[[a]]\n[a.b]\n[[a]]\n[a.b]\nc = 1\n",
	} {
		docs[name] = doc
	}

	valid, invalid := 0, 0
	for name, doc := range docs {
		var want map[string]any
		wantErr := toml.Unmarshal([]byte(doc), &want)
		d, err := Parse([]byte(doc))
		if wantErr != nil {
			invalid++
			require.Error(t, err, "%s: go-toml rejects it (%v); tomledit must too:\n%s", name, wantErr, doc)
			var derr *toml.DecodeError
			if errors.As(wantErr, &derr) {
				line, col := derr.Position()
				var serr *SyntaxError
				require.ErrorAs(t, err, &serr)
				require.Equal(t, SyntaxError{Line: line, Column: col, Msg: derr.Error()}, *serr, name)
			}
			continue
		}
		valid++
		require.NoError(t, err, "%s: go-toml accepts it; tomledit must too:\n%s", name, doc)
		if want == nil {
			want = map[string]any{}
		}
		// %#v sorts map keys, shows types, and prints NaN equal to NaN.
		require.Equal(t, fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", d.root), "%s:\n%s", name, doc)
	}
	t.Logf("%d documents valid, %d invalid", valid, invalid)
	require.Greater(t, valid, 250)
	require.Greater(t, invalid, 400)
}

// FuzzDecodeMatchesGoTOML looks for documents on which the linear decoder
// and toml.Unmarshal disagree (validity, values, error message and place),
// from the toml-test documents; testdata/fuzz holds what it found:
//
//	go test -run '^$' -fuzz FuzzDecodeMatchesGoTOML -fuzztime 60s ./internal/tomledit/
func FuzzDecodeMatchesGoTOML(f *testing.F) {
	data, err := os.ReadFile("testdata/toml-test-v2.1.0.json")
	require.NoError(f, err)
	var cases []struct{ Name, Input string }
	require.NoError(f, json.Unmarshal(data, &cases))
	for _, c := range cases {
		f.Add(c.Input)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var want map[string]any
		wantErr := toml.Unmarshal([]byte(doc), &want)
		d, err := Parse([]byte(doc))
		if wantErr != nil {
			require.Error(t, err, "go-toml rejects it (%v)", wantErr)
			var derr *toml.DecodeError
			if errors.As(wantErr, &derr) {
				line, col := derr.Position()
				require.Equal(t, &SyntaxError{Line: line, Column: col, Msg: derr.Error()}, err)
			}
			return
		}
		require.NoError(t, err)
		if want == nil {
			want = map[string]any{}
		}
		require.Equal(t, fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", d.root))
	})
}

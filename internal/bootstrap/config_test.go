package bootstrap

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseConfigRejectsUnknownKeys(t *testing.T) {
	_, err := ParseConfig("node.yaml", []byte("runtime:\n  engin: containerd\n"))
	if err == nil || !strings.Contains(err.Error(), "engin") || !strings.Contains(err.Error(), "node.yaml") {
		t.Fatalf("err = %v, want an unknown-field error naming the key and the file", err)
	}
}

func TestParseConfigReadsEverySection(t *testing.T) {
	cfg, err := ParseConfig("node.yaml", []byte(`
driver:
  branch: "570"
  kernel_modules: open
persistence: true
runtime:
  engine: containerd
  set_as_default: true
  enable_cdi: true
cdi:
  enabled: true
verify:
  expect_gpus: 8
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver.Branch != "570" || cfg.Driver.KernelModules != "open" || !*cfg.Persistence ||
		cfg.Runtime.Engine != "containerd" || !cfg.Runtime.SetAsDefault || !cfg.Runtime.EnableCDI ||
		!cfg.CDI.Enabled || cfg.Verify.ExpectGPUs != 8 {
		t.Errorf("parsed %+v", cfg)
	}
	var names []string
	for _, step := range cfg.Steps() {
		names = append(names, step.Name())
	}
	if got, want := strings.Join(names, ","), "driver,persistence,runtime,cdi"; got != want {
		t.Errorf("steps = %s, want %s", got, want)
	}
}

// TestParseConfigErrorsSayWhereAndWhat: every way a desired-state file can
// be wrong is an error naming the file, line and column, the key, and what
// to do, in words (not Go types, not a mis-decoded BOM).
func TestParseConfigErrorsSayWhereAndWhat(t *testing.T) {
	tests := []struct {
		description string
		doc         string
		want        []string // one fragment per error, in order
	}{
		{"An empty file is an error, not \"No changes\".", "", []string{"node.yaml: the config has no sections; give at least one of driver, toolkit, persistence, runtime, cdi, gpu, verify (see README"}},
		{"A file of comments only has no sections.", "# runtime:\n#   engine: docker\n", []string{"node.yaml: the config has no sections"}},
		{"A document that is null has no sections.", "---\n", []string{"node.yaml:2:1: the config has no sections"}},
		{"An empty mapping has no sections.", "{}\n", []string{"node.yaml:1:1: the config has no sections"}},
		{"A second document is rejected, not ignored.", "runtime:\n  engine: docker\n---\ndriver:\n  branch: \"570\"\n", []string{"node.yaml:3:1: a second YAML document starts here"}},
		{"A second document that does not parse is still a second document.", "runtime:\n  engine: docker\n---\n- [\n", []string{"node.yaml:4: text after the first YAML document (a --- separator, then did not find expected node content)"}},
		{"A quoted number where a number goes names the key and the fix.", "verify:\n  expect_gpus: \"8\"\n", []string{`node.yaml:2:16: verify.expect_gpus: is the quoted text "8"; want a whole number (remove the quotes)`}},
		{"A fraction where a whole number goes.", "verify:\n  expect_gpus: 8.5\n", []string{"node.yaml:2:16: verify.expect_gpus: is the number 8.5; want a whole number"}},
		{"A number past the type's range says the range.", "gpu:\n  power_limit_watts: 5000000000\n", []string{"node.yaml:2:22: gpu.power_limit_watts: 5000000000 is out of range; want a whole number from 0 to 4294967295"}},
		{"A negative number for an unsigned key.", "gpu:\n  application_clocks:\n    memory_mhz: -1\n    graphics_mhz: 1410\n", []string{"node.yaml:3:17: gpu.application_clocks.memory_mhz: -1 is out of range; want a whole number from 0"}},
		{"A number too large even for 64 bits.", "verify:\n  expect_gpus: 99999999999999999999\n", []string{"node.yaml:2:16: verify.expect_gpus: 99999999999999999999 is out of range"}},
		{"Text where a boolean goes.", "runtime:\n  engine: docker\n  set_as_default: yes please\n", []string{`node.yaml:3:19: runtime.set_as_default: is the text "yes please"; want true or false`}},
		{"A quoted boolean.", "persistence: \"true\"\n", []string{`node.yaml:1:14: persistence: is the quoted text "true"; want true or false (remove the quotes)`}},
		{"A section given as a single value.", "runtime: docker\n", []string{`node.yaml:1:10: runtime: is the text "docker"; runtime is a section: key: value pairs, one per line, such as engine: ...`}},
		{"A list where a section goes, at the top.", "- runtime\n", []string{"node.yaml:1:1: is a list; the config is a section"}},
		{"A single value where a list goes.", "gpu:\n  mig:\n    enabled: true\n    profiles: 3g.20gb\n", []string{`node.yaml:4:15: gpu.mig.profiles: is the text "3g.20gb"; want a list, e.g. profiles: [value]`}},
		{"A list where a single value goes.", "runtime:\n  engine: [docker]\n", []string{"node.yaml:2:11: runtime.engine: is a list; want a single value"}},
		{"Every bad list item is reported, by index.", "gpu:\n  mig:\n    enabled: true\n    gpus: [0, \"1\", x]\n", []string{`node.yaml:4:15: gpu.mig.gpus[1]: is the quoted text "1"`, `node.yaml:4:20: gpu.mig.gpus[2]: is the text "x"; want a whole number`}},
		{"A key with no value is not a section left out.", "runtime:\npersistence: true\n", []string{"node.yaml:1:9: runtime: has no value; give one (see README), or remove the key to leave runtime out"}},
		{"An unknown key suggests the near one and lists the others.", "runtime:\n  engin: containerd\n", []string{`node.yaml:2:3: runtime.engin: unknown key (did you mean "engine"?); runtime takes engine, set_as_default, enable_cdi, config_path, runtime_path`}},
		{"An unknown section.", "runtme:\n  engine: docker\n", []string{`node.yaml:1:1: runtme: unknown key (did you mean "runtime"?); the config takes driver, toolkit`}},
		{"A key of another section says where it belongs.", "engine: docker\n", []string{"node.yaml:1:1: engine: unknown key here (it belongs at runtime.engine); the config takes driver"}},
		{"A key in the wrong section says where it belongs.", "runtime:\n  engine: docker\n  expect_gpus: 8\n", []string{"node.yaml:3:3: runtime.expect_gpus: unknown key here (it belongs at verify.expect_gpus); runtime takes"}},
		{"A key far from every known one gets no suggestion.", "kubernetes: {}\n", []string{"node.yaml:1:1: kubernetes: unknown key; the config takes"}},
		{"A duplicate key is an error, at its second place.", "runtime:\n  engine: docker\nruntime:\n  engine: crio\n", []string{"node.yaml:3:1: runtime: is set twice (first on line 1); YAML keys are unique: keep one"}},
		{"A duplicate key inside a section.", "runtime:\n  engine: docker\n  engine: crio\n", []string{"node.yaml:3:3: runtime.engine: is set twice (first on line 2)"}},
		{"A merge key is not silently taken as a key.", "runtime:\n  <<: {engine: docker}\n", []string{"node.yaml:2:3: runtime: has a key that is not a plain name"}},
		{"A tab in the indentation is located exactly.", "runtime:\n  engine: docker\n\tset_as_default: true\n", []string{"node.yaml:3:1: a tab in the indentation; YAML indents with spaces only"}},
		{"A syntax error yaml.v3 gives no line for gets the line.", "runtime:\n  engine: docker\n  set_as_default: a: b\n", []string{"node.yaml:3: not valid YAML: mapping values are not allowed in this context"}},
		{"A syntax error with a line.", "runtime:\n  engine: [docker\n", []string{"node.yaml:1: not valid YAML: did not find expected ',' or ']'; check the indentation and quoting from this line on"}},
		{"A %YAML directive yaml.v3 refuses.", "%YAML 1.2\n---\nruntime:\n  engine: docker\n", []string{"node.yaml:1: a %YAML directive for a version other than 1.1"}},
		{"A byte that is not UTF-8, with its line and column.", "runtime:\n  engine: dock\xe9r\n", []string{"node.yaml:2:15: byte 0xE9 is not UTF-8 text; save the file as UTF-8"}},
		{"A UTF-16 file.", "\xff\xfer\x00u\x00", []string{"node.yaml:1:1: the file is UTF-16"}},
		{"A UTF-32 file.", "\xff\xfe\x00\x00r\x00\x00\x00", []string{"node.yaml:1:1: the file is UTF-32"}},
		{"The wrong file gets a screenful of errors, not thousands.", "gpu:\n  mig:\n    enabled: true\n    gpus: [" + strings.Repeat("x, ", 500) + "x]\n", append(slices.Repeat([]string{"want a whole number"}, 20), "node.yaml: and 481 more problems; fix these first")},
		{"Every problem is reported at once.", "runtime:\n  engin: docker\n  set_as_default: maybe\nverify:\n  expect_gpus: many\n", []string{"node.yaml:2:3: runtime.engin", "node.yaml:3:19: runtime.set_as_default", "node.yaml:5:16: verify.expect_gpus"}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			_, err := ParseConfig("node.yaml", []byte(tc.doc))
			require.Error(t, err)
			errs := []error{err}
			if joined, ok := err.(interface{ Unwrap() []error }); ok {
				errs = joined.Unwrap()
			}
			requireFieldErrors(t, errs, tc.want)
			require.NotContains(t, err.Error(), "json", "the error speaks of the decoder, not the config")
		})
	}
}

// TestParseConfigAcceptsWhatYAMLAllows: a UTF-8 byte order mark (YAML 1.2
// §5.2), CRLF line ends, an explicit document start and end, anchors, YAML
// 1.1 booleans for boolean keys and numbers for string keys all read as the
// user meant.
func TestParseConfigAcceptsWhatYAMLAllows(t *testing.T) {
	want := &Config{Driver: &DriverConfig{Branch: "570"}, Runtime: &RuntimeConfig{Engine: "docker", SetAsDefault: true}}
	for description, doc := range map[string]string{
		"plain":                      "driver:\n  branch: \"570\"\nruntime:\n  engine: docker\n  set_as_default: true\n",
		"a UTF-8 byte order mark":    "\ufeffdriver:\n  branch: \"570\"\nruntime:\n  engine: docker\n  set_as_default: true\n",
		"CRLF line ends":             "driver:\r\n  branch: \"570\"\r\nruntime:\r\n  engine: docker\r\n  set_as_default: true\r\n",
		"a document start and end":   "%YAML 1.1\n---\ndriver:\n  branch: \"570\"\nruntime:\n  engine: docker\n  set_as_default: true\n...\n",
		"an unquoted branch and yes": "driver:\n  branch: 570\nruntime:\n  engine: docker\n  set_as_default: yes\n",
		"flow style and an alias":    "driver: {branch: '570'}\nruntime: {engine: docker, set_as_default: &on true}\n",
		"comments everywhere":        "# node\ndriver: # the driver\n  branch: \"570\" # pinned\nruntime:\n  # containerd is for later\n  engine: docker\n  set_as_default: true\n",
	} {
		t.Run(description, func(t *testing.T) {
			cfg, err := ParseConfig("node.yaml", []byte(doc))
			require.NoError(t, err)
			cfg.origins = nil
			require.Equal(t, want, cfg)
		})
	}
}

// TestParseConfigAgreesWithJSONTags decodes a document that sets every key
// of every section and checks that each Go field got its value: a field of a
// type the decoder has no rule for, or a json tag it misreads, fails here.
func TestParseConfigAgreesWithJSONTags(t *testing.T) {
	var doc strings.Builder
	writeSampleYAML(&doc, reflect.TypeFor[Config](), "")
	cfg, err := ParseConfig("all.yaml", []byte(doc.String()))
	require.NoError(t, err, doc.String())
	requireNoZeroLeaf(t, reflect.ValueOf(*cfg), "")
	require.NotEmpty(t, cfg.origins)
}

func writeSampleYAML(b *strings.Builder, t reflect.Type, indent string) {
	for f := range t.Fields() {
		name := jsonName(f)
		if name == "" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Struct:
			b.WriteString(indent + name + ":\n")
			writeSampleYAML(b, ft, indent+"  ")
		case reflect.Slice:
			b.WriteString(indent + name + ": [" + sampleScalar(ft.Elem()) + "]\n")
		default:
			b.WriteString(indent + name + ": " + sampleScalar(ft) + "\n")
		}
	}
}

func sampleScalar(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true"
	case reflect.String:
		return "sample"
	default:
		return "7"
	}
}

func requireNoZeroLeaf(t *testing.T, v reflect.Value, field string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		require.False(t, v.IsNil(), "%s was not decoded", field)
		requireNoZeroLeaf(t, v.Elem(), field)
	case reflect.Struct:
		for i := range v.NumField() {
			if name := jsonName(v.Type().Field(i)); name != "" {
				requireNoZeroLeaf(t, v.Field(i), join(field, name))
			}
		}
	default:
		require.False(t, v.IsZero(), "%s was not decoded", field)
	}
}

// TestValidateErrorsNameTheLine: Validate's errors, found after parsing,
// point at the value in the file, at the section of a missing key, or at the
// flag that set the value.
func TestValidateErrorsNameTheLine(t *testing.T) {
	cfg, err := ParseConfig("node.yaml", []byte("persistence: true\nruntime:\n  set_as_default: true\ndriver:\n  branch: \"570\"\n  kernel_modules: closed\n"))
	require.NoError(t, err)
	err = cfg.Validate()
	require.ErrorContains(t, err, "node.yaml:2:1: runtime.engine: missing")
	require.ErrorContains(t, err, `node.yaml:6:19: driver.kernel_modules: "closed"`)

	cfg.Runtime.Engine = "podman"
	cfg.FromFlag("runtime.engine", "--runtime")
	require.ErrorContains(t, cfg.Validate(), `runtime.engine (set by --runtime): "podman" is not a container engine`)
	require.NotContains(t, cfg.Validate().Error(), "node.yaml:2:1: runtime.engine")
}

// TestLoadConfigRefusesWhatIsNotAConfigFile: a directory, a missing file and
// a file far larger than any desired state are errors naming the path.
func TestLoadConfigRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadConfig(dir)
	require.ErrorContains(t, err, dir+": is a directory; give --config the desired-state YAML file itself")

	_, err = LoadConfig(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
	require.ErrorIs(t, err, os.ErrNotExist)

	huge := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(huge, []byte("# "+strings.Repeat("x", maxConfigBytes)+"\nruntime:\n  engine: docker\n"), 0o644))
	_, err = LoadConfig(huge)
	require.ErrorContains(t, err, huge+": is larger than 1024 KiB")

	ok := filepath.Join(dir, "node.yaml")
	require.NoError(t, os.WriteFile(ok, []byte("\ufeffruntime:\r\n  engine: docker\r\n"), 0o644))
	cfg, err := LoadConfig(ok)
	require.NoError(t, err)
	require.Equal(t, "docker", cfg.Runtime.Engine)
}

// FuzzParseConfig: whatever the bytes, ParseConfig does not panic, and
// every error it returns is a *FieldError that names the file and speaks of
// the config, not of the decoder's Go types.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"", "---\n", "runtime:\n  engine: docker\n", "runtime: &a\n  engine: *a\n", "gpu:\n  mig:\n    gpus: [1, [2], {a: 3}]\n",
		"\ufeffverify: {expect_gpus: 0x10}\n", "persistence: !!binary aGVsbG8=\n", "driver: {branch: 570, branch: 580}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("fuzz.yaml", data)
		if err == nil {
			require.NotNil(t, cfg)
			_ = cfg.Validate()
			return
		}
		errs := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
		for _, e := range errs {
			var ferr *FieldError
			require.ErrorAs(t, e, &ferr)
			require.Equal(t, "fuzz.yaml", ferr.File, "%v", e)
			require.NotContains(t, e.Error(), "reflect", "%v", e)
			require.NotContains(t, e.Error(), "unmarshal", "%v", e)
		}
	})
}

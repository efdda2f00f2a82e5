package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The package's -update flag rewrites golden files; whichever test file's
// init runs first defines it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/")
	}
}

func updateRuntimeGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const runtimeCases = "testdata/runtime"

var runtimeTestNow = func() time.Time { return time.Date(2026, 11, 22, 7, 18, 0, 0, time.UTC) }

// runtimeCase is testdata/runtime/<case>/case.json. The case's input/ is
// the file system before apply, want/ after it (go test -update rewrites
// want/), and nvidia-ctk.toml / nvidia-ctk.json, where present, is what
// nvidia-ctk 1.20.1 writes for the same input (see oracle/).
type runtimeCase struct {
	Description string        `json:"description"`
	Runtime     RuntimeConfig `json:"runtime"`
	CDI         *CDIConfig    `json:"cdi,omitempty"`
	// ContainerdVersion / CRIOVersion are what `containerd --version` /
	// `crio --version` print; empty means the command answers nothing.
	ContainerdVersion string `json:"containerd_version,omitempty"`
	CRIOVersion       string `json:"crio_version,omitempty"`
	// Changes is how many changes the first apply makes.
	Changes int `json:"changes"`
	// Restart is the service the changes name.
	Restart string `json:"restart,omitempty"`
}

func loadRuntimeCases(t *testing.T) map[string]runtimeCase {
	t.Helper()
	entries, err := os.ReadDir(runtimeCases)
	require.NoError(t, err)
	cases := map[string]runtimeCase{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(runtimeCases, e.Name(), "case.json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		var c runtimeCase
		require.NoError(t, json.Unmarshal(data, &c), e.Name())
		cases[e.Name()] = c
	}
	require.NotEmpty(t, cases)
	return cases
}

// runtimeHost is a host whose root holds the case's input files.
func runtimeHost(t *testing.T, name string, c runtimeCase) (*Host, *RecordingRunner) {
	t.Helper()
	root := t.TempDir()
	input := filepath.Join(runtimeCases, name, "input")
	if _, err := os.Stat(input); err == nil {
		for path, data := range readRuntimeTree(t, input) {
			full := filepath.Join(root, path)
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			require.NoError(t, os.WriteFile(full, data, 0o644))
		}
	}
	runner := &RecordingRunner{}
	if c.ContainerdVersion != "" {
		runner.Reply("containerd --version", Output{Stdout: []byte(c.ContainerdVersion + "\n")})
	}
	if c.CRIOVersion != "" {
		runner.Reply("crio --version", Output{Stdout: []byte(c.CRIOVersion + "\n")})
	}
	return &Host{Root: root, Runner: runner, Now: runtimeTestNow, Getenv: func(string) string { return "" }}, runner
}

// readRuntimeTree is every file under dir by its path relative to dir,
// leaving out apply's backups.
func readRuntimeTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if strings.HasPrefix("/"+rel, BackupDir+"/") {
			return nil
		}
		data, err := os.ReadFile(p)
		files[rel] = data
		return err
	})
	require.NoError(t, err)
	return files
}

func runtimeSteps(c runtimeCase) []Step {
	return []Step{newRuntimeStep(c.Runtime, c.CDI)}
}

// TestRuntimeGolden applies each case under testdata/runtime to a copy of
// its input and compares every file with want/. A second apply must change
// nothing and say so, and the plan after it must be empty.
func TestRuntimeGolden(t *testing.T) {
	for name, c := range loadRuntimeCases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h, _ := runtimeHost(t, name, c)
			input := readRuntimeTree(t, h.Root)
			var out bytes.Buffer
			report, err := Apply(ctx, h, runtimeSteps(c), ApplyOptions{Out: &out})
			require.NoError(t, err, out.String())
			require.Equal(t, c.Changes, report.Changes, "%s\n%s", c.Description, out.String())
			if c.Changes > 0 {
				require.Equal(t, []string{c.Restart}, report.Restarts, out.String())
				require.Contains(t, out.String(), c.Restart+" must be restarted")
			}
			if c.Runtime.Engine == engineAuto {
				require.Contains(t, out.String(), "(engine detected: ", "the summary says what auto found")
			}
			for _, backup := range report.Backups {
				original := strings.TrimPrefix(backup, BackupDir+"/20261122T071800Z/")
				data, err := os.ReadFile(h.Path(backup))
				require.NoError(t, err, "the backup %s exists", backup)
				require.Equal(t, string(input[original]), string(data), "the backup holds the old /%s", original)
			}

			got := readRuntimeTree(t, h.Root)
			wantDir := filepath.Join(runtimeCases, name, "want")
			if updateRuntimeGolden() {
				require.NoError(t, os.RemoveAll(wantDir))
				for path, data := range got {
					full := filepath.Join(wantDir, path)
					require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
					require.NoError(t, os.WriteFile(full, data, 0o644))
				}
			}
			want := readRuntimeTree(t, wantDir)
			require.Equal(t, sortedKeys(want), sortedKeys(got), "the files after apply")
			for path := range want {
				require.Equal(t, string(want[path]), string(got[path]), "/%s differs from want/ (go test -run TestRuntimeGolden -update rewrites it)\n%s", path, out.String())
			}

			out.Reset()
			again, err := Apply(ctx, h, runtimeSteps(c), ApplyOptions{Out: &out})
			require.NoError(t, err)
			require.Zero(t, again.Changes, "the second apply:\n%s", out.String())
			require.Contains(t, out.String(), "No changes")
			require.Equal(t, got, readRuntimeTree(t, h.Root), "the second apply leaves every file byte for byte")
			plan, err := MakePlan(ctx, h, runtimeSteps(c))
			require.NoError(t, err)
			require.True(t, plan.Empty())
		})
	}
}

// installNvidiaRuntime puts a stand-in for nvidia-container-runtime at its
// default path under root, as the toolkit's packages would, and returns root.
func installNvidiaRuntime(t *testing.T, root string) string {
	t.Helper()
	full := filepath.Join(root, defaultNvidiaRuntimePath)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte("#!/bin/sh\n"), 0o755))
	return root
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func TestRuntimeKeepsTheModeAndBacksUpTheReplacedFile(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const config = "/etc/containerd/config.toml"
	old := "version = 2\n\n# site settings\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, config), []byte(old), 0o600))
	installNvidiaRuntime(t, root)
	h := &Host{Root: root, Runner: &RecordingRunner{}, Now: runtimeTestNow}

	report, err := Apply(ctx, h, []Step{newRuntimeStep(RuntimeConfig{Engine: engineContainerd}, nil)}, ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, report.Changes)

	backup := "/var/backups/gpu-bootstrap/20261122T071800Z/etc/containerd/config.toml"
	require.Equal(t, []string{backup}, report.Backups)
	data, err := os.ReadFile(filepath.Join(root, backup))
	require.NoError(t, err)
	require.Equal(t, old, string(data))

	info, err := os.Stat(filepath.Join(root, config))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "the replaced file keeps its mode")
	data, err = os.ReadFile(filepath.Join(root, config))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), old), "the old text is kept as it was, the runtime added after it:\n%s", data)
	require.Contains(t, string(data), "BinaryName = \"/usr/bin/nvidia-container-runtime\"")
}

// TestRuntimeLeavesFilesItCannotParseUnchanged: a file that is not valid
// TOML or JSON (or has a value where a table must go) fails the plan with a
// *ParseError that names the file and line, and apply writes nothing.
func TestRuntimeLeavesFilesItCannotParseUnchanged(t *testing.T) {
	tests := []struct {
		description string
		cfg         RuntimeConfig
		files       map[string]string
		path        string
		line        int
		message     string
	}{
		{
			description: "containerd config with an unterminated table header",
			cfg:         RuntimeConfig{Engine: engineContainerd, SetAsDefault: true},
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"\n" +
				"  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			path: "/etc/containerd/config.toml",
			line: 3,
		},
		{
			description: "containerd config that defines a key twice",
			cfg:         RuntimeConfig{Engine: engineContainerd},
			files:       map[string]string{"/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\nenable_cdi = false\n"},
			path:        "/etc/containerd/config.toml",
			line:        4,
		},
		{
			description: "containerd config whose runtimes are a string",
			cfg:         RuntimeConfig{Engine: engineContainerd},
			files:       map[string]string{"/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = \"runc\"\n"},
			path:        "/etc/containerd/config.toml",
			line:        3,
			message:     "is a string, not a table",
		},
		{
			description: "an existing containerd drop-in that is broken",
			cfg:         RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":           "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
				"/etc/containerd/conf.d/99-nvidia.toml": "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia]\nruntime_type = \n",
			},
			path: "/etc/containerd/conf.d/99-nvidia.toml",
			line: 3,
		},
		{
			description: "daemon.json with a trailing comma",
			cfg:         RuntimeConfig{Engine: engineDocker, EnableCDI: true},
			files: map[string]string{"/etc/docker/daemon.json": "{\n  \"log-driver\": \"json-file\",\n  \"registry-mirrors\": [\"https://mirror.example.com\"],\n" +
				"}\n"},
			path: "/etc/docker/daemon.json",
			line: 4,
		},
		{
			description: "daemon.json cut short",
			cfg:         RuntimeConfig{Engine: engineDocker},
			files:       map[string]string{"/etc/docker/daemon.json": "{\n  \"runtimes\": {\n    \"runsc\": {\"path\": \"/usr/bin/runsc\"}\n"},
			path:        "/etc/docker/daemon.json",
			line:        4,
		},
		{
			description: "daemon.json whose runtimes are a list",
			cfg:         RuntimeConfig{Engine: engineDocker},
			files:       map[string]string{"/etc/docker/daemon.json": "{\n  \"log-driver\": \"journald\",\n  \"runtimes\": []\n}\n"},
			path:        "/etc/docker/daemon.json",
			line:        3,
			message:     `"runtimes" must be a JSON object`,
		},
		{
			description: "a CRI-O drop-in that CRI-O reads before ours is broken",
			cfg:         RuntimeConfig{Engine: engineCRIO},
			files: map[string]string{
				"/etc/crio/crio.conf":             "[crio.runtime]\ndefault_runtime = \"crun\"\n",
				"/etc/crio/crio.conf.d/10-x.conf": "[crio.runtime\n",
			},
			path: "/etc/crio/crio.conf.d/10-x.conf",
			line: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			for path, content := range tc.files {
				full := filepath.Join(root, path)
				require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
				require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
			}
			installNvidiaRuntime(t, root)
			h := &Host{Root: root, Runner: &RecordingRunner{}, Now: runtimeTestNow}
			steps := []Step{newRuntimeStep(tc.cfg, nil)}

			_, err := MakePlan(ctx, h, steps)
			var perr *ParseError
			require.True(t, errors.As(err, &perr), "want a *ParseError, got %v", err)
			t.Log(err)
			require.Equal(t, tc.path, perr.Path)
			require.Equal(t, tc.line, perr.Line, err.Error())
			require.Contains(t, err.Error(), tc.path+":")
			require.Contains(t, err.Error(), "left unchanged")
			if tc.message != "" {
				require.Contains(t, err.Error(), tc.message)
			}

			_, err = Apply(ctx, h, steps, ApplyOptions{})
			require.True(t, errors.As(err, &perr), "apply fails the same way: %v", err)
			for path, content := range tc.files {
				data, err := os.ReadFile(filepath.Join(root, path))
				require.NoError(t, err)
				require.Equal(t, content, string(data), "%s is byte for byte as it was", path)
			}
			_, err = os.Stat(filepath.Join(root, BackupDir))
			require.True(t, errors.Is(err, fs.ErrNotExist), "no backup was made")
			_, err = os.Stat(filepath.Join(root, "etc/containerd/conf.d/99-nvidia.toml"))
			if _, listed := tc.files["/etc/containerd/conf.d/99-nvidia.toml"]; !listed {
				require.True(t, errors.Is(err, fs.ErrNotExist), "no drop-in was written")
			}
		})
	}
}

func TestRuntimeConfigValidate(t *testing.T) {
	tests := []struct {
		description string
		cfg         RuntimeConfig
		want        []string // "field: problem fragment"
	}{
		{"Each engine is accepted.", RuntimeConfig{Engine: "crio", ConfigPath: "/etc/crio/crio.conf", RuntimePath: "/usr/local/bin/nvidia-container-runtime"}, nil},
		{"auto is accepted.", RuntimeConfig{Engine: "auto", SetAsDefault: true}, nil},
		{"A missing engine names the choices.", RuntimeConfig{}, []string{"runtime.engine: missing; set it to one of containerd, docker, crio, auto"}},
		{"An unknown engine names the choices.", RuntimeConfig{Engine: "podman"}, []string{`runtime.engine: "podman" is not a container engine; use one of containerd, docker, crio, auto`}},
		{"Engine names are exact.", RuntimeConfig{Engine: "Docker"}, []string{`runtime.engine: "Docker" is not`}},
		{"A relative config path.", RuntimeConfig{Engine: "containerd", ConfigPath: "etc/containerd/config.toml"}, []string{`runtime.config_path: "etc/containerd/config.toml" is not an absolute path`}},
		{"A config path with auto.", RuntimeConfig{Engine: "auto", ConfigPath: "/etc/containerd/config.toml"}, []string{"runtime.config_path: a config file needs a known engine"}},
		{"A relative runtime binary.", RuntimeConfig{Engine: "docker", RuntimePath: "nvidia-container-runtime"}, []string{`runtime.runtime_path: "nvidia-container-runtime" is not an absolute path`}},
		{"Every problem at once.", RuntimeConfig{Engine: "rkt", ConfigPath: "x", RuntimePath: "y"}, []string{"runtime.engine:", "runtime.config_path:", "runtime.runtime_path:"}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			requireFieldErrors(t, tc.cfg.validate("runtime"), tc.want)
		})
	}
}

func TestRuntimeConfigValidateThroughConfig(t *testing.T) {
	cfg, err := ParseConfig("bootstrap.yaml", []byte("runtime:\n  engine: containred\n  set_as_default: true\n"))
	require.NoError(t, err)
	err = cfg.Validate()
	require.ErrorContains(t, err, `runtime.engine: "containred" is not a container engine`)
}

func TestRuntimeAutoDetectsTheEngine(t *testing.T) {
	tests := []struct {
		description string
		files       map[string]string
		want        string // engine, or the error fragment
		wantErr     bool
	}{
		{
			description: "Docker with its own containerd (CRI plugin disabled) is docker.",
			files: map[string]string{
				"/usr/bin/dockerd":            "",
				"/usr/bin/containerd":         "",
				"/etc/containerd/config.toml": "disabled_plugins = [\"cri\"]\n",
			},
			want: engineDocker,
		},
		{
			description: "Docker with a containerd binary but no containerd config is docker.",
			files:       map[string]string{"/usr/bin/dockerd": "", "/usr/bin/containerd": ""},
			want:        engineDocker,
		},
		{
			description: "containerd alone is containerd.",
			files:       map[string]string{"/usr/local/bin/containerd": ""},
			want:        engineContainerd,
		},
		{
			description: "CRI-O by its drop-in directory is crio.",
			files:       map[string]string{"/etc/crio/crio.conf.d/10-crio.conf": ""},
			want:        engineCRIO,
		},
		{
			description: "Docker next to a containerd that serves Kubernetes is ambiguous.",
			files: map[string]string{
				"/usr/bin/dockerd":            "",
				"/usr/bin/containerd":         "",
				"/etc/containerd/config.toml": "version = 2\n",
			},
			want:    "more than one container engine: containerd (/usr/bin/containerd), docker (/usr/bin/dockerd)",
			wantErr: true,
		},
		{
			description: "Nothing installed is an error that asks for runtime.engine.",
			files:       map[string]string{},
			want:        "runtime.engine: auto found no container engine",
			wantErr:     true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range tc.files {
				full := filepath.Join(root, path)
				require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
				require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
			}
			h := &Host{Root: root, Runner: &RecordingRunner{}}
			engine, _, err := detectEngine(h)
			if tc.wantErr {
				require.ErrorContains(t, err, tc.want)
				var ferr *FieldError
				require.True(t, errors.As(err, &ferr))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, engine)
		})
	}
}

// TestRuntimeContainerdVersionRules: what the detected containerd version
// decides, and that the summary says which config version was used and why.
func TestRuntimeContainerdVersionRules(t *testing.T) {
	tests := []struct {
		description string
		version     string // containerd --version output
		config      string // "" = no file
		cfg         RuntimeConfig
		summary     string
		err         string
	}{
		{
			description: "A new file for containerd 2.x is version 3.",
			version:     "containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4",
			summary:     "create /etc/containerd/config.toml: add the nvidia runtime (/usr/bin/nvidia-container-runtime) (containerd config version 3: a new file for containerd 2.0.2)",
		},
		{
			description: "A new file for Docker's containerd.io 1.6 is version 2.",
			version:     "containerd containerd.io 1.6.28 ae07eda36dd25f8a1b98dfbf587313b99c0190bb",
			summary:     "(containerd config version 2: a new file for containerd 1.6.28)",
		},
		{
			description: "Without an answer from containerd a new file is version 2.",
			summary:     "(containerd config version 2: a new file; `containerd --version` gave no version",
		},
		{
			description: "A file without a version key is version 1.",
			config:      "[plugins.cri]\n  sandbox_image = \"pause\"\n",
			summary:     "(containerd config version 1: the file has no version key, which containerd reads as version 1)",
		},
		{
			description: "CDI needs containerd 1.7.",
			version:     "containerd github.com/containerd/containerd v1.6.33 d2d58213f83a351ca8f528a95fbd145f5654e957",
			cfg:         RuntimeConfig{EnableCDI: true},
			err:         "runtime.enable_cdi: containerd 1.6.33 has no CDI support (it came in containerd 1.7)",
		},
		{
			description: "A version 3 file is refused for containerd 1.x.",
			version:     "containerd github.com/containerd/containerd v1.7.24 88bf19b2105c8b17560993bee28a01ddc2f97182",
			config:      "version = 3\n",
			err:         "config version 3, which containerd 1.7.24 cannot read",
		},
		{
			description: "An unknown version key is refused.",
			config:      "version = 7\n",
			err:         "version = 7 is not a containerd config version (1, 2 or 3)",
		},
		{
			description: "Imports on containerd 1.x still edit the main file, and say why.",
			version:     "containerd github.com/containerd/containerd v1.7.24 88bf19b2105c8b17560993bee28a01ddc2f97182",
			config:      "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
			summary:     "in the main file although it has imports: containerd before 2.0 replaces whole plugin sections from imported files (containerd/containerd#5837)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			root := t.TempDir()
			installNvidiaRuntime(t, root)
			if tc.config != "" {
				require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(tc.config), 0o644))
			}
			runner := &RecordingRunner{}
			if tc.version != "" {
				runner.Reply("containerd --version", Output{Stdout: []byte(tc.version + "\n")})
			}
			h := &Host{Root: root, Runner: runner}
			cfg := tc.cfg
			cfg.Engine = engineContainerd
			changes, err := newRuntimeStep(cfg, nil).Plan(context.Background(), h)
			require.Equal(t, []string{"chroot " + root + " containerd --version"}, runner.Lines(), "the version comes from the target's containerd")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.Contains(t, changes[0].Summary, tc.summary)
			require.Equal(t, "containerd", changes[0].Restart)
		})
	}
}

func TestRuntimeCRIOChecksItsCDISupport(t *testing.T) {
	runner := &RecordingRunner{}
	runner.Reply("crio --version", Output{Stdout: []byte("crio version 1.23.5\n")})
	h := &Host{Root: installNvidiaRuntime(t, t.TempDir()), Runner: runner}
	_, err := newRuntimeStep(RuntimeConfig{Engine: engineCRIO, EnableCDI: true}, nil).Plan(context.Background(), h)
	require.ErrorContains(t, err, "runtime.enable_cdi: CRI-O 1.23.5 cannot inject CDI devices")

	runner = &RecordingRunner{}
	runner.Reply("crio --version", Output{Stdout: []byte("crio version 1.24.0\n")})
	h = &Host{Root: installNvidiaRuntime(t, t.TempDir()), Runner: runner}
	changes, err := newRuntimeStep(RuntimeConfig{Engine: engineCRIO, EnableCDI: true}, nil).Plan(context.Background(), h)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.NotContains(t, string(changes[0].File().New), "cdi", "CRI-O needs no setting for CDI")
}

func TestParseEngineVersion(t *testing.T) {
	tests := []struct {
		out  string
		want string
		ok   bool
	}{
		{"containerd github.com/containerd/containerd v1.7.12 71909c1814c544ac47ab91d2e8b84718e517bb99", "1.7.12", true},
		{"containerd github.com/containerd/containerd/v2 v2.1.0 061792f0ecf3684fb30a3a0eb006799b8c6638a7", "2.1.0", true},
		{"containerd containerd.io 1.6.28 ae07eda36dd25f8a1b98dfbf587313b99c0190bb", "1.6.28", true},
		{"crio version 1.29.1\nVersion:  1.29.1\nGitCommit: 78e179ba8dd3ce462382a17049e8d1f770246af1", "1.29.1", true},
		{"", "", false},
		{"containerd: command not found", "", false},
	}
	for _, tc := range tests {
		v, ok := parseEngineVersion(tc.out)
		require.Equal(t, tc.ok, ok, tc.out)
		require.Equal(t, tc.want, v.String(), tc.out)
	}
	v, _ := parseEngineVersion("v2.0.0")
	require.True(t, v.atLeast(2, 0))
	require.True(t, v.atLeast(1, 7))
	require.False(t, v.atLeast(2, 1))
}

func TestRuntimeDryRunWritesNothingAndRestartIsAsked(t *testing.T) {
	ctx := context.Background()
	c := loadRuntimeCases(t)["containerd-v2-existing"]
	h, runner := runtimeHost(t, "containerd-v2-existing", c)
	before := readRuntimeTree(t, h.Root)

	var out bytes.Buffer
	report, err := Apply(ctx, h, runtimeSteps(c), ApplyOptions{DryRun: true, RestartRuntime: true, Out: &out})
	require.NoError(t, err)
	require.Equal(t, 1, report.Changes)
	require.Equal(t, before, readRuntimeTree(t, h.Root), "--dry-run writes nothing")
	require.Contains(t, out.String(), "runtime: would update /etc/containerd/config.toml: add the nvidia runtime")
	require.Contains(t, out.String(), `BinaryName = "/usr/bin/nvidia-container-runtime"`)
	require.Contains(t, out.String(), "would run: systemctl restart containerd")

	report, err = Apply(ctx, h, runtimeSteps(c), ApplyOptions{RestartRuntime: true, Out: &out})
	require.NoError(t, err)
	require.Equal(t, []string{"containerd"}, report.Restarts)
	require.Contains(t, runner.Lines(), "chroot "+h.Root+" systemctl restart containerd")
}

// TestRuntimeRefusesAMissingRuntimeBinary: without nvidia-container-runtime
// under the root, and no toolkit step to install it, the plan fails naming
// runtime.runtime_path and both fixes, and apply writes nothing.
func TestRuntimeRefusesAMissingRuntimeBinary(t *testing.T) {
	tests := []struct {
		description string
		cfg         RuntimeConfig
		binary      string
	}{
		{"The default binary is missing.", RuntimeConfig{Engine: engineContainerd}, defaultNvidiaRuntimePath},
		{"A configured binary is missing.", RuntimeConfig{Engine: engineDocker, RuntimePath: "/opt/nvidia/bin/nvidia-container-runtime"}, "/opt/nvidia/bin/nvidia-container-runtime"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			ctx := context.Background()
			root := installNvidiaRuntime(t, t.TempDir()) // the default path exists; a configured one must still be found
			if tc.binary == defaultNvidiaRuntimePath {
				root = t.TempDir()
			}
			h := &Host{Root: root, Runner: &RecordingRunner{}, Now: runtimeTestNow}
			steps := []Step{newRuntimeStep(tc.cfg, nil)}

			_, err := MakePlan(ctx, h, steps)
			var ferr *FieldError
			require.True(t, errors.As(err, &ferr), "want a *FieldError, got %v", err)
			require.Equal(t, "runtime.runtime_path", ferr.Field)
			require.Contains(t, err.Error(), tc.binary+" does not exist under "+root)
			require.Contains(t, err.Error(), "toolkit: {install: true}")
			require.Contains(t, err.Error(), "install nvidia-container-toolkit")

			before := readRuntimeTree(t, root)
			_, err = Apply(ctx, h, steps, ApplyOptions{})
			require.True(t, errors.As(err, &ferr), "apply fails the same way: %v", err)
			require.Equal(t, before, readRuntimeTree(t, root), "nothing was written")
		})
	}
}

// TestRuntimePlansAfterAPendingToolkit: a missing runtime binary is fine
// while the toolkit step of the same run still has its install to do, and
// only then (pendingStep, from cdi_test.go, stands in for the toolkit step).
func TestRuntimePlansAfterAPendingToolkit(t *testing.T) {
	ctx := context.Background()
	h := &Host{Root: t.TempDir(), Runner: &RecordingRunner{}, Now: runtimeTestNow}
	runtime := newRuntimeStep(RuntimeConfig{Engine: engineContainerd}, nil)

	plan, err := MakePlan(ctx, h, []Step{pendingStep{name: "toolkit"}, runtime})
	require.NoError(t, err)
	require.Len(t, plan, 2)
	require.Len(t, plan[1].Changes, 1)
	require.Contains(t, plan[1].Changes[0].Summary, "add the nvidia runtime (/usr/bin/nvidia-container-runtime)")

	_, err = MakePlan(ctx, h, []Step{pendingStep{name: "driver"}, runtime})
	require.ErrorContains(t, err, "runtime.runtime_path:", "a pending driver does not bring the runtime")

	elsewhere := newRuntimeStep(RuntimeConfig{Engine: engineContainerd, RuntimePath: "/opt/nvidia/nvidia-container-runtime"}, nil)
	_, err = MakePlan(ctx, h, []Step{pendingStep{name: "toolkit"}, elsewhere})
	require.ErrorContains(t, err, "runtime.runtime_path: /opt/nvidia/nvidia-container-runtime does not exist", "the toolkit's packages install to /usr/bin only")
}

package bootstrap

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
)

// TestRuntimeMatchesNvidiaCtk compares, for every case that has an
// nvidia-ctk.toml or nvidia-ctk.json (written by testdata/runtime/oracle
// with nvidia-container-toolkit 1.20.1's own engine packages), the nvidia
// runtime settings the engine ends up with from our files and from
// nvidia-ctk's. Files are compared as the engine reads them (decoded, a
// drop-in merged over the main config), not as text: nvidia-ctk re-encodes
// the whole file and drops its comments, which is what the step avoids.
//
// Where the two differ on purpose, the test says so:
//   - nvidia-ctk 1.20.1 writes version 1's enable_cdi under
//     plugins.cri.containerd, where containerd does not read it; the step
//     writes plugins.cri.enable_cdi (containerd 1.7 pkg/cri/config
//     PluginConfig).
//   - nvidia-ctk rebuilds an existing nvidia runtime from runc's settings
//     (or bare defaults), dropping what was set on it (SystemdCgroup in
//     containerd-v2-runtime-moved); the step only corrects its binary. For
//     inputs that already have an nvidia runtime only the binary and the
//     runtime type are compared.
//   - nvidia-ctk adds runtime_root = "", runtime_engine = "" and
//     privileged_without_host_devices = false to a runtime it cannot copy;
//     zero values are left out of the comparison.
//   - For Docker, nvidia-ctk leaves "default-runtime": "nvidia" in place
//     without --set-as-default; the step removes it (as nvidia-ctk does for
//     containerd and CRI-O).
//   - containerd 2.x has CDI on unless the config turns it off, so the step
//     writes enable_cdi only where it is off; an absent key is compared as
//     containerd's default.
func TestRuntimeMatchesNvidiaCtk(t *testing.T) {
	for name, c := range loadRuntimeCases(t) {
		dir := filepath.Join(runtimeCases, name)
		t.Run(name, func(t *testing.T) {
			switch c.Runtime.Engine {
			case engineContainerd:
				oracle := filepath.Join(dir, "nvidia-ctk.toml")
				if !fileExists(oracle) {
					t.Skip("no nvidia-ctk output for this case")
				}
				compareContainerdWithNvidiaCtk(t, dir, c)
			case engineCRIO:
				oracle := filepath.Join(dir, "nvidia-ctk.toml")
				if !fileExists(oracle) {
					t.Skip("no nvidia-ctk output for this case")
				}
				ours := decodeTOMLFile(t, filepath.Join(dir, "want/etc/crio/crio.conf.d/99-nvidia.conf"))
				theirs := decodeTOMLFile(t, oracle)
				for _, path := range [][]string{crioRuntime(nvidiaRuntime), crioDefaultRuntime} {
					require.Equal(t, pruneZero(lookup(theirs, path...)), pruneZero(lookup(ours, path...)), "%v", path)
				}
			case engineDocker:
				oracle := filepath.Join(dir, "nvidia-ctk.json")
				if !fileExists(oracle) {
					t.Skip("no nvidia-ctk output for this case")
				}
				ours := decodeJSONFile(t, filepath.Join(dir, "want/etc/docker/daemon.json"))
				theirs := decodeJSONFile(t, oracle)
				require.Equal(t, lookup(theirs, "runtimes", "nvidia"), lookup(ours, "runtimes", "nvidia"))
				require.Equal(t, lookup(theirs, "features", "cdi"), lookup(ours, "features", "cdi"))
				if c.Runtime.SetAsDefault {
					require.Equal(t, lookup(theirs, "default-runtime"), lookup(ours, "default-runtime"))
				}
				// Everything else is nvidia-ctk's too: it keeps the other keys.
				for key := range theirs {
					if key != "default-runtime" && key != "cdi-spec-dirs" {
						require.Equal(t, theirs[key], ours[key], key)
					}
				}
			default:
				t.Skip("auto: the engine's own case covers it")
			}
		})
	}
}

func compareContainerdWithNvidiaCtk(t *testing.T, dir string, c runtimeCase) {
	t.Helper()
	ours := decodeTOMLFile(t, filepath.Join(dir, "want/etc/containerd/config.toml"))
	if dropIn := filepath.Join(dir, "want/etc/containerd/conf.d/99-nvidia.toml"); fileExists(dropIn) {
		mergeTOML(ours, decodeTOMLFile(t, dropIn))
	}
	// nvidia-ctk's output holds the whole CRI section (its drop-in copies
	// it), so it stands alone for everything compared here.
	theirs := decodeTOMLFile(t, filepath.Join(dir, "nvidia-ctk.toml"))
	input := map[string]any{}
	if in := filepath.Join(dir, "input/etc/containerd/config.toml"); fileExists(in) {
		input = decodeTOMLFile(t, in)
	}

	version := int64(1)
	if v, ok := ours["version"].(int64); ok {
		version = v
	}
	schema := containerdSchemaFor(version)
	ver, known := parseEngineVersion(c.ContainerdVersion)
	cdiDefault := version >= 3 || known && ver.atLeast(2, 0)

	rt := schema.runtime(nvidiaRuntime)
	if lookup(input, rt...) == nil {
		require.Equal(t, pruneZero(lookup(theirs, rt...)), pruneZero(lookup(ours, rt...)), "the nvidia runtime")
	} else {
		for _, key := range [][]string{{"options", "BinaryName"}, {"runtime_type"}} {
			require.Equal(t, lookup(theirs, append(rt, key...)...), lookup(ours, append(rt, key...)...), "%v", key)
		}
	}
	require.Equal(t, lookup(theirs, schema.defaultRuntime()...), lookup(ours, schema.defaultRuntime()...), "default_runtime_name")

	cdi := func(m map[string]any, path ...string) bool {
		if v, ok := lookup(m, path...).(bool); ok {
			return v
		}
		return cdiDefault
	}
	theirCDIPath := schema.cri("enable_cdi")
	if version == 1 {
		theirCDIPath = schema.cri("containerd", "enable_cdi")
	}
	require.Equal(t, cdi(theirs, theirCDIPath...), cdi(ours, schema.cri("enable_cdi")...), "CDI on")
}

// TestRuntimeChangesOnlyNvidiaKeys: decoded, each containerd file after
// apply equals its input but for the keys the step owns.
func TestRuntimeChangesOnlyNvidiaKeys(t *testing.T) {
	for name, c := range loadRuntimeCases(t) {
		if c.Runtime.Engine != engineContainerd {
			continue
		}
		dir := filepath.Join(runtimeCases, name)
		in := filepath.Join(dir, "input/etc/containerd/config.toml")
		if !fileExists(in) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			before := decodeTOMLFile(t, in)
			after := decodeTOMLFile(t, filepath.Join(dir, "want/etc/containerd/config.toml"))
			version := int64(1)
			if v, ok := before["version"].(int64); ok {
				version = v
			}
			s := containerdSchemaFor(version)
			for _, m := range []map[string]any{before, after} {
				remove(m, s.runtime(nvidiaRuntime)...)
				remove(m, s.defaultRuntime()...)
				remove(m, s.cri("enable_cdi")...)
				remove(m, s.cri("cdi_spec_dirs")...)
				remove(m, "imports")
				dropEmptyTables(m)
			}
			require.Equal(t, before, after)
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func decodeTOMLFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, toml.Unmarshal(data, &m), path)
	return m
}

func decodeJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m), path)
	return m
}

func lookup(m map[string]any, path ...string) any {
	var cur any = m
	for _, key := range path {
		table, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = table[key]
	}
	return cur
}

func remove(m map[string]any, path ...string) {
	for _, key := range path[:len(path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// dropEmptyTables removes tables left empty (the parents of a removed
// runtime, or an empty [..runtimes] header).
func dropEmptyTables(m map[string]any) {
	for key, v := range m {
		if sub, ok := v.(map[string]any); ok {
			dropEmptyTables(sub)
			if len(sub) == 0 {
				delete(m, key)
			}
		}
	}
}

// mergeTOML merges src into dst table by table, as containerd 2.x merges an
// imported file (cmd/containerd/server/config mergeConfig).
func mergeTOML(dst, src map[string]any) {
	for key, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if target, ok := dst[key].(map[string]any); ok {
				mergeTOML(target, sub)
				continue
			}
		}
		dst[key] = v
	}
}

// pruneZero drops "" and false values (and tables left empty).
func pruneZero(v any) any {
	table, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for key, value := range table {
		switch value := pruneZero(value).(type) {
		case string:
			if value != "" {
				out[key] = value
			}
		case bool:
			if value {
				out[key] = value
			}
		case map[string]any:
			if len(value) > 0 {
				out[key] = value
			}
		default:
			out[key] = value
		}
	}
	return out
}

package bootstrap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
)

// TestRuntimeAlongsideNvidiaCtkDropIn takes the cases whose input/ is a
// node on which nvidia-ctk 1.20.1 `runtime configure` ran in its default
// drop-in mode (case.json nvidia_ctk_drop_in; testdata/runtime/oracle writes
// input/ from node/ with the toolkit's own engine packages) and shows that
// plan, apply and check agree with what the engine loads: the files merged
// as containerd and CRI-O merge them — computed here from the decoded files,
// independently of runtime_effective.go — run the nvidia runtime at the
// binary asked, as the default exactly when asked, with CDI on when asked;
// only one file defines the nvidia runtime, so gpu-bootstrap added no second
// one beside nvidia-ctk's; the plan says which file holds it; and the check
// of the runtime step passes after apply.
func TestRuntimeAlongsideNvidiaCtkDropIn(t *testing.T) {
	seen := 0
	for name, c := range loadRuntimeCases(t) {
		dir := filepath.Join(runtimeCases, name)
		if !fileExists(filepath.Join(dir, "node")) {
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h, _ := runtimeHost(t, name, c)
			steps := runtimeSteps(c)
			toolkitFile := map[string]string{
				engineContainerd: "/etc/containerd/conf.d/99-nvidia.toml",
				engineCRIO:       "/etc/crio/crio.conf.d/99-nvidia.toml",
			}[c.Runtime.Engine]
			require.FileExists(t, h.Path(toolkitFile), "the oracle wrote nvidia-ctk's drop-in")

			// Plan: as many changes as the case says, and a note naming
			// the file that holds the nvidia runtime.
			plan, err := MakePlan(ctx, h, steps)
			require.NoError(t, err)
			require.Len(t, plan, 1)
			require.Len(t, plan[0].Changes, c.Changes, "%s", c.Description)
			require.NotEmpty(t, plan[0].Notes)
			require.Contains(t, strings.Join(plan[0].Notes, "\n"), toolkitFile)

			// Apply, then what the engine loads.
			var out bytes.Buffer
			_, err = Apply(ctx, h, steps, ApplyOptions{Out: &out})
			require.NoError(t, err, out.String())
			loaded := engineLoads(t, h.Root, c)
			require.Equal(t, []string{toolkitFile}, loaded.nvidiaDefinedIn, "one file defines the nvidia runtime: nvidia-ctk's")
			require.Equal(t, defaultNvidiaRuntimePath, loaded.binary)
			if c.Runtime.SetAsDefault {
				require.Equal(t, nvidiaRuntime, loaded.defaultRuntime)
			} else {
				require.NotEqual(t, nvidiaRuntime, loaded.defaultRuntime)
			}
			if c.Runtime.EnableCDI {
				require.True(t, loaded.cdi, "CDI on")
			}

			// Check: the runtime step is configured, and the plan is empty.
			v := &verification{}
			v.checkSteps(ctx, h, steps)
			require.Empty(t, v.problems)
			require.Equal(t, []string{"runtime: configured"}, v.checks)
			again, err := MakePlan(ctx, h, steps)
			require.NoError(t, err)
			require.True(t, again.Empty())
		})
	}
	require.GreaterOrEqual(t, seen, 5, "the nvidia-ctk drop-in cases are there")
}

// loadedConfig is the nvidia runtime as an engine loads it from its files.
type loadedConfig struct {
	binary          string
	defaultRuntime  string
	cdi             bool
	nvidiaDefinedIn []string // the files that define the nvidia runtime's table
}

// engineLoads merges a case's files after apply as the engine does.
func engineLoads(t *testing.T, root string, c runtimeCase) loadedConfig {
	t.Helper()
	var got loadedConfig
	switch c.Runtime.Engine {
	case engineContainerd:
		// containerd: the main file, then its imports globbed in lexical
		// order; 2.x merges plugin tables key by key, 1.x replaces each
		// imported plugin table whole (cmd/containerd/server/config
		// mergeConfig; containerd/containerd#5837, #9982).
		ver, _ := parseEngineVersion(c.ContainerdVersion)
		main := decodeTOMLFile(t, filepath.Join(root, defaultContainerdConfig))
		version, _ := main["version"].(int64)
		schema := containerdSchemaFor(version)
		merged := decodeTOMLFile(t, filepath.Join(root, defaultContainerdConfig))
		if lookup(main, schema.runtime(nvidiaRuntime)...) != nil {
			got.nvidiaDefinedIn = append(got.nvidiaDefinedIn, defaultContainerdConfig)
		}
		imports, _ := stringList(main["imports"])
		for _, imp := range imports {
			matches, err := filepath.Glob(filepath.Join(root, imp))
			require.NoError(t, err)
			slices.Sort(matches)
			for _, m := range matches {
				file := decodeTOMLFile(t, m)
				if lookup(file, schema.runtime(nvidiaRuntime)...) != nil {
					got.nvidiaDefinedIn = append(got.nvidiaDefinedIn, strings.TrimPrefix(m, root))
				}
				if ver.atLeast(2, 0) {
					mergeTOML(merged, file)
					continue
				}
				plugins, _ := merged["plugins"].(map[string]any)
				imported, _ := lookup(file, "plugins").(map[string]any)
				for k, v := range imported {
					plugins[k] = v
				}
			}
		}
		got.binary, _ = lookup(merged, schema.runtime(nvidiaRuntime, "options", "BinaryName")...).(string)
		got.defaultRuntime, _ = lookup(merged, schema.defaultRuntime()...).(string)
		cdi, set := lookup(merged, schema.cri("enable_cdi")...).(bool)
		got.cdi = cdi || !set && ver.atLeast(2, 0)
	case engineCRIO:
		// CRI-O: crio.conf, then crio.conf.d in lexical order, key by key,
		// except that a runtime's table replaces the runtime whole
		// (crio.conf.d(5)).
		merged := map[string]any{}
		files := []string{filepath.Join(root, defaultCRIOConfig)}
		dropIns, err := filepath.Glob(filepath.Join(root, "etc/crio/crio.conf.d/*"))
		require.NoError(t, err)
		slices.Sort(dropIns)
		for _, f := range append(files, dropIns...) {
			data, err := os.ReadFile(f)
			if os.IsNotExist(err) {
				continue
			}
			require.NoError(t, err)
			file := map[string]any{}
			require.NoError(t, toml.Unmarshal(data, &file), f)
			if runtimes, ok := lookup(file, "crio", "runtime", "runtimes").(map[string]any); ok {
				if _, ok := runtimes[nvidiaRuntime]; ok {
					got.nvidiaDefinedIn = append(got.nvidiaDefinedIn, strings.TrimPrefix(f, root))
				}
				if have, ok := lookup(merged, "crio", "runtime", "runtimes").(map[string]any); ok {
					for name, rt := range runtimes {
						have[name] = rt
					}
					runtime, _ := lookup(file, "crio", "runtime").(map[string]any)
					delete(runtime, "runtimes")
				}
			}
			mergeTOML(merged, file)
		}
		got.binary, _ = lookup(merged, crioRuntime(nvidiaRuntime, "runtime_path")...).(string)
		got.defaultRuntime, _ = lookup(merged, crioDefaultRuntime...).(string)
		got.cdi = true // CRI-O 1.24 and later
	}
	return got
}

// TestRuntimeWarnsAboutNvidiaCtkDropInsTheEngineDoesNotRead: nvidia-ctk
// 1.18 and 1.19 put CRI-O's drop-in in /etc/crio/conf.d, which CRI-O does
// not read; nvidia-ctk 1.20.1 writes a version 1 containerd config whole to
// conf.d/99-nvidia.toml without importing it. The plan configures the
// files the engine reads and warns about the dead one.
func TestRuntimeWarnsAboutNvidiaCtkDropInsTheEngineDoesNotRead(t *testing.T) {
	for _, tc := range []struct {
		description string
		runtime     RuntimeConfig
		files       map[string]string
		versions    map[string]string
		warning     string
		writes      string
	}{
		{
			description: "CRI-O with nvidia-ctk 1.19's /etc/crio/conf.d/99-nvidia.toml",
			runtime:     RuntimeConfig{Engine: engineCRIO},
			files:       map[string]string{"/etc/crio/conf.d/99-nvidia.toml": nvidiaCtkCRIODropIn},
			versions:    map[string]string{"crio --version": "crio version 1.29.1"},
			warning:     "/etc/crio/conf.d/99-nvidia.toml is where nvidia-ctk 1.18 and 1.19 write CRI-O's drop-in, but CRI-O reads /etc/crio/crio.conf.d, not /etc/crio/conf.d, so that file does nothing",
			writes:      "/etc/crio/crio.conf.d/99-nvidia.conf",
		},
		{
			description: "containerd with a version 1 config and nvidia-ctk 1.20.1's unimported conf.d/99-nvidia.toml",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":           "[plugins.cri.containerd]\n  snapshotter = \"overlayfs\"\n",
				"/etc/containerd/conf.d/99-nvidia.toml": "[plugins.cri.containerd.runtimes.nvidia.options]\n  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n",
			},
			versions: map[string]string{"containerd --version": "containerd github.com/containerd/containerd v1.6.33 d2d58213"},
			warning:  "/etc/containerd/conf.d/99-nvidia.toml (where nvidia-ctk 1.18+ writes containerd's nvidia runtime) is not imported by /etc/containerd/config.toml, so containerd does not read it",
			writes:   "/etc/containerd/config.toml",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			h := effectiveHost(t, tc.files, tc.versions)
			plan, err := MakePlan(context.Background(), h, []Step{newRuntimeStep(tc.runtime, nil)})
			require.NoError(t, err)
			require.Len(t, plan, 1)
			require.Len(t, plan[0].Changes, 1)
			require.Equal(t, tc.writes, plan[0].Changes[0].File().Path)
			require.Len(t, plan[0].Warnings, 1)
			require.Contains(t, plan[0].Warnings[0], tc.warning)
		})
	}
}

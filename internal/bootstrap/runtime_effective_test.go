package bootstrap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// effectiveHost is a root holding files (target path -> content) and the
// nvidia runtime; versions are what `<engine> --version` prints.
func effectiveHost(t *testing.T, files map[string]string, versions map[string]string) *Host {
	t.Helper()
	root := installNvidiaRuntime(t, t.TempDir())
	for path, content := range files {
		full := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	runner := &RecordingRunner{}
	for cmd, out := range versions {
		runner.Reply(cmd, Output{Stdout: []byte(out + "\n")})
	}
	return &Host{Root: root, Runner: runner, Now: runtimeTestNow, Getenv: func(string) string { return "" }}
}

// nvidiaCtkCRIODropIn is what nvidia-ctk 1.20.1 `runtime configure
// --runtime=crio --set-as-default` writes (testdata/runtime/crio-existing/
// nvidia-ctk.toml), here with the GPU operator's toolkit path, as the
// operator's toolkit container leaves it at /etc/crio/crio.conf.d/99-nvidia.toml.
const nvidiaCtkCRIODropIn = `
[crio]

  [crio.runtime]
    default_runtime = "nvidia"

    [crio.runtime.runtimes]

      [crio.runtime.runtimes.nvidia]
        monitor_path = "/usr/libexec/crio/conmon"
        runtime_path = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
        runtime_root = "/run/crun"
        runtime_type = "oci"
`

// TestRuntimePlansAgainstTheEffectiveConfig plans configs whose engine
// merges more than one file: a file read after ours that overrides the
// nvidia runtime is an error naming it, and set_as_default: false removes a
// default of nvidia from whichever file sets it.
func TestRuntimePlansAgainstTheEffectiveConfig(t *testing.T) {
	crio := map[string]string{"crio --version": "crio version 1.29.1"}
	containerd2 := map[string]string{"containerd --version": "containerd github.com/containerd/containerd/v2 v2.1.0 061792f0"}
	containerd17 := map[string]string{"containerd --version": "containerd containerd.io 1.7.25 bcc810d6"}
	const v3main = "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"
	cases := []struct {
		description string
		runtime     RuntimeConfig
		files       map[string]string
		versions    map[string]string
		// wantErr are substrings of the plan's error; empty: the plan
		// succeeds, and apply then leaves the files in wantFiles.
		wantErr   []string
		wantFiles map[string]string
	}{
		{
			description: "nvidia-ctk's CRI-O drop-in 99-nvidia.toml sorts after our 99-nvidia.conf and points the runtime at the GPU operator's binary: the plan names it",
			runtime:     RuntimeConfig{Engine: engineCRIO, SetAsDefault: true},
			files:       map[string]string{"/etc/crio/crio.conf.d/99-nvidia.toml": nvidiaCtkCRIODropIn},
			versions:    crio,
			wantErr:     []string{"/etc/crio/crio.conf.d/99-nvidia.toml", "/usr/local/nvidia/toolkit/nvidia-container-runtime", "runtime.runtime_path"},
		},
		{
			description: "set_as_default: false with nvidia made the default in crio.conf and in a later drop-in: removed from both, where they would win",
			runtime:     RuntimeConfig{Engine: engineCRIO},
			files: map[string]string{
				"/etc/crio/crio.conf":                   "[crio.runtime]\ndefault_runtime = \"nvidia\"\n",
				"/etc/crio/crio.conf.d/99-zz-site.conf": "[crio.runtime]\ndefault_runtime = \"nvidia\"\nlog_level = \"info\"\n",
			},
			versions: crio,
			wantFiles: map[string]string{
				"/etc/crio/crio.conf":                   "[crio.runtime]\n",
				"/etc/crio/crio.conf.d/99-zz-site.conf": "[crio.runtime]\nlog_level = \"info\"\n",
			},
		},
		{
			description: "set_as_default: true while a later CRI-O drop-in makes crun the default: the plan names that file",
			runtime:     RuntimeConfig{Engine: engineCRIO, SetAsDefault: true},
			files:       map[string]string{"/etc/crio/crio.conf.d/zz-site.conf": "[crio.runtime]\ndefault_runtime = \"crun\"\n"},
			versions:    crio,
			wantErr:     []string{"/etc/crio/crio.conf.d/zz-site.conf makes crun the default runtime"},
		},
		{
			description: "containerd 2.1 with another drop-in that makes nvidia the default: set_as_default: false removes it there",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":        v3main,
				"/etc/containerd/conf.d/10-gpu.toml": "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n  default_runtime_name = \"nvidia\"\n  snapshotter = \"overlayfs\"\n",
			},
			versions: containerd2,
			wantFiles: map[string]string{
				"/etc/containerd/conf.d/10-gpu.toml": "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n  snapshotter = \"overlayfs\"\n",
			},
		},
		{
			description: "containerd 2.1 with a drop-in sorting after ours that points the nvidia runtime elsewhere: the plan names it",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":             v3main,
				"/etc/containerd/conf.d/zz-operator.toml": "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n  BinaryName = \"/usr/local/nvidia/toolkit/nvidia-container-runtime\"\n",
			},
			versions: containerd2,
			wantErr:  []string{"/etc/containerd/conf.d/zz-operator.toml", "/usr/local/nvidia/toolkit/nvidia-container-runtime"},
		},
		{
			description: "an imported file of version 2 is read in its own schema (containerd 2.x migrates it): its nvidia default is found and removed",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":       v3main,
				"/etc/containerd/conf.d/50-v2.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"nvidia\"\n",
			},
			versions: containerd2,
			wantFiles: map[string]string{
				"/etc/containerd/conf.d/50-v2.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n",
			},
		},
		{
			description: "containerd 1.7 replaces a whole plugin table from an import: an import with its own CRI table hides the runtime written in the main file",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				"/etc/containerd/config.toml":          "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
				"/etc/containerd/conf.d/registry.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
			},
			versions: containerd17,
			wantErr:  []string{"/etc/containerd/conf.d/registry.toml", "replaces the whole table"},
		},
		{
			description: "Docker's containerd.io package config (disabled_plugins = [\"cri\"]): CRI runtime settings do nothing there, and the plan says so",
			runtime:     RuntimeConfig{Engine: engineContainerd},
			files: map[string]string{
				// containerd.io's /etc/containerd/config.toml (docker/containerd-packaging common/containerd.toml).
				"/etc/containerd/config.toml": "#   Copyright 2018-2022 Docker Inc.\n\n#   Licensed under the Apache License, Version 2.0 (the \"License\");\n\ndisabled_plugins = [\"cri\"]\n\n#root = \"/var/lib/containerd\"\n#state = \"/run/containerd\"\n",
			},
			versions: containerd17,
			wantErr:  []string{"/etc/containerd/config.toml disables containerd's CRI plugin", "runtime.engine: docker"},
		},
	}
	for _, c := range cases {
		t.Run(c.description, func(t *testing.T) {
			ctx := context.Background()
			h := effectiveHost(t, c.files, c.versions)
			steps := []Step{newRuntimeStep(c.runtime, nil)}
			plan, err := MakePlan(ctx, h, steps)
			if len(c.wantErr) > 0 {
				require.Error(t, err)
				for _, s := range c.wantErr {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.False(t, plan.Empty())
			var out bytes.Buffer
			_, err = Apply(ctx, h, steps, ApplyOptions{Out: &out})
			require.NoError(t, err, out.String())
			for path, want := range c.wantFiles {
				require.Equal(t, want, readTarget(t, h, path), "%s after apply\n%s", path, out.String())
			}
			again, err := MakePlan(ctx, h, steps)
			require.NoError(t, err)
			require.True(t, again.Empty(), "the plan after apply is empty")
		})
	}
}

// TestContainerdMergesImportsBreadthFirst: containerd loads the main file,
// then the imports of each loaded file in turn (a relative import against
// its importing file's directory, a glob in lexical order), every file once
// even when imported twice (cmd/containerd/server/config LoadConfig).
func TestContainerdMergesImportsBreadthFirst(t *testing.T) {
	h := effectiveHost(t, map[string]string{
		"/etc/containerd/config.toml":       "version = 3\nimports = [\"conf.d/*.toml\", \"/etc/containerd/conf.d/20-b.toml\"]\n",
		"/etc/containerd/conf.d/20-b.toml":  "version = 3\n",
		"/etc/containerd/conf.d/10-a.toml":  "version = 3\nimports = [\"../extra.toml\"]\n",
		"/etc/containerd/conf.d/notes.txt":  "not imported\n",
		"/etc/containerd/extra.toml":        "version = 3\nimports = [\"/etc/containerd/config.toml\"]\n",
		"/etc/containerd/conf.d/sub/x.toml": "version = 3\n",
	}, nil)
	eff, err := containerdEffective(h, "/etc/containerd/config.toml", true, nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		"/etc/containerd/config.toml",
		"/etc/containerd/conf.d/10-a.toml",
		"/etc/containerd/conf.d/20-b.toml",
		"/etc/containerd/extra.toml",
	}, eff.paths())
	require.Equal(t, eff.paths(), containerdConfigFiles(h, ""), "the restart check reads the same files")
}

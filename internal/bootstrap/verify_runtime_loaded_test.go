package bootstrap

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerifyAsksTheRunningEngineWhichRuntimesItLoaded feeds each engine's
// own report (shapes of containerd 1.7's `crictl info`, Docker 27's
// `docker info --format '{{json .}}'`, CRI-O 1.29's `crio status config`)
// to the check.
func TestVerifyAsksTheRunningEngineWhichRuntimesItLoaded(t *testing.T) {
	const crictlInfo = `{"status":{"conditions":[{"type":"RuntimeReady","status":true}]},"config":{"containerd":{"snapshotter":"overlayfs","defaultRuntimeName":"%s","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2"}%s}},"enableCDI":false}}`
	nvidiaEntry := `,"nvidia":{"runtimeType":"io.containerd.runc.v2","options":{"BinaryName":"/usr/bin/nvidia-container-runtime"}}`
	cases := []struct {
		description string
		cfg         RuntimeConfig
		command     string
		reply       string
		problem     string // "" = a check, no problem
	}{
		{"containerd loaded nvidia as its default", RuntimeConfig{Engine: engineContainerd, SetAsDefault: true}, "crictl info",
			strings.Replace(strings.Replace(crictlInfo, "%s", "nvidia", 1), "%s", nvidiaEntry, 1), ""},
		{"containerd runs without the nvidia runtime", RuntimeConfig{Engine: engineContainerd}, "crictl info",
			strings.Replace(strings.Replace(crictlInfo, "%s", "runc", 1), "%s", "", 1), "the running containerd has not loaded the nvidia runtime (crictl info lists runc)"},
		{"docker's default is not nvidia although asked", RuntimeConfig{Engine: engineDocker, SetAsDefault: true}, "docker info",
			`{"ID":"x","Runtimes":{"io.containerd.runc.v2":{"path":"runc"},"nvidia":{"path":"/usr/bin/nvidia-container-runtime"},"runc":{"path":"runc"}},"DefaultRuntime":"runc"}`,
			`the running docker's default runtime is "runc", not nvidia`},
		{"CRI-O made nvidia the default although set_as_default is false", RuntimeConfig{Engine: engineCRIO}, "crio status config",
			"[crio.runtime]\n  default_runtime = \"nvidia\"\n  [crio.runtime.runtimes.crun]\n    runtime_path = \"/usr/libexec/crio/crun\"\n  [crio.runtime.runtimes.nvidia]\n    runtime_path = \"/usr/bin/nvidia-container-runtime\"\n",
			"default runtime is nvidia although set_as_default is false"},
	}
	for _, c := range cases {
		t.Run(c.description, func(t *testing.T) {
			h, runner := newTestHost(t)
			runner.Reply(c.command, Output{Stdout: []byte(c.reply)})
			v := &verification{}
			v.checkLoadedRuntimes(context.Background(), h, &c.cfg)
			if c.problem == "" {
				require.Empty(t, v.problems)
				require.Len(t, v.checks, 1)
				require.Contains(t, v.checks[0], "has loaded the nvidia runtime")
				return
			}
			require.Len(t, v.problems, 1)
			require.Contains(t, v.problems[0], c.problem)
		})
	}

	t.Run("an engine that cannot be asked says nothing", func(t *testing.T) {
		h, runner := newTestHost(t)
		runner.Reply("crictl info", Output{ExitCode: 1, Stderr: []byte("connect: no such file or directory\n")})
		v := &verification{}
		v.checkLoadedRuntimes(context.Background(), h, &RuntimeConfig{Engine: engineContainerd})
		require.Empty(t, v.problems)
		require.Empty(t, v.checks)
	})
}

// TestVerifyNamesALaterFileThatOverridesTheRuntime: check plans the
// runtime step against the merged config, so a drop-in read after ours is
// reported by name.
func TestVerifyNamesALaterFileThatOverridesTheRuntime(t *testing.T) {
	h := effectiveHost(t, map[string]string{
		"/etc/crio/crio.conf.d/99-nvidia.conf": "[crio.runtime]\ndefault_runtime = \"nvidia\"\n[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/nvidia-container-runtime\"\nruntime_type = \"oci\"\n",
		"/etc/crio/crio.conf.d/99-nvidia.toml": nvidiaCtkCRIODropIn,
	}, map[string]string{"crio --version": "crio version 1.29.1"})
	v := &verification{}
	v.checkSteps(context.Background(), h, []Step{newRuntimeStep(RuntimeConfig{Engine: engineCRIO, SetAsDefault: true}, nil)})
	require.Len(t, v.problems, 1)
	require.Contains(t, v.problems[0], "/etc/crio/crio.conf.d/99-nvidia.toml sets the nvidia runtime's binary to /usr/local/nvidia/toolkit/nvidia-container-runtime")
}

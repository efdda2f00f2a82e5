package bootstrap

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// refreshUnits is nvidia-cdi-refresh as nvidia-container-toolkit-base 1.20
// installs it on Debian (packaging/debian/*.install) and debhelper enables
// it (both units WantedBy=multi-user.target): the units in
// /lib/systemd/system and their wants links. It has written nothing yet.
var refreshUnits = map[string]string{
	"/lib/systemd/system/nvidia-cdi-refresh.service":                         "[Service]\nEnvironment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml\nExecStart=/usr/bin/nvidia-ctk cdi generate\n",
	"/lib/systemd/system/nvidia-cdi-refresh.path":                            "[Path]\nPathChanged=/usr/bin/nvidia-ctk\n",
	"/etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.path":    "->/lib/systemd/system/nvidia-cdi-refresh.path",
	"/etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.service": "->/lib/systemd/system/nvidia-cdi-refresh.service",
}

// gpuSpec is a spec of the nvidia.com/gpu devices, as the refresh writes.
const gpuSpec = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidiactl\n"

// refreshed is refreshUnits after the service has written its spec.
var refreshed = withFiles(refreshUnits, map[string]string{cdiRefreshOutput: gpuSpec})

// planCDI plans the cdi step as MakePlan does and returns its changes and
// what it said.
func planCDI(t *testing.T, h *Host, cfg CDIConfig) ([]Change, stepMessages, error) {
	t.Helper()
	defer h.beginPlanning(true)()
	changes, said, err := h.planStep(context.Background(), newCDIStep(cfg))
	return changes, said, err
}

func TestCDIStepsAsideWhileNvidiaCdiRefreshOwnsTheDevices(t *testing.T) {
	for _, tc := range []struct {
		description string
		specPath    string
		files       map[string]string
		removes     string // the spec the plan removes; "" for none
	}{
		{description: "a node without a spec of ours gets none", files: refreshed},
		{
			description: "a spec an earlier run wrote in /etc/cdi is removed, since CDI would load both",
			files:       withFiles(refreshed, map[string]string{DefaultCDISpecPath: gpuSpec}),
			removes:     DefaultCDISpecPath,
		},
		{
			description: "only the path unit masked: the enabled service still writes at boot",
			files:       withFiles(refreshed, map[string]string{"/etc/systemd/system/nvidia-cdi-refresh.path": "->/dev/null", DefaultCDISpecPath: gpuSpec}),
			removes:     DefaultCDISpecPath,
		},
		{
			description: "cdi.spec_path naming the refresh's own file leaves it to the refresh",
			specPath:    "/var/run/cdi/nvidia.yaml",
			files:       withFiles(refreshUnits, map[string]string{"/var/run/cdi/nvidia.yaml": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n"}),
		},
		{
			description: "the output path the env file gives is the refresh's file",
			specPath:    "/run/cdi/gpus.yaml",
			files:       withFiles(refreshUnits, map[string]string{cdiRefreshEnvFile: "# set by the site\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=\"/var/run/cdi/gpus.yaml\"\n", "/run/cdi/gpus.yaml": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n"}),
		},
		{
			description: "a spec of other devices at cdi.spec_path is not ours to remove",
			files:       withFiles(refreshed, map[string]string{DefaultCDISpecPath: "cdiVersion: 0.5.0\nkind: vendor.example/fpga\ndevices: []\n"}),
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			root := t.TempDir()
			plantFiles(t, root, tc.files)
			// No GPU library at all: stepping aside needs no driver.
			h := &Host{Root: root, Runner: &RecordingRunner{}, Getenv: func(string) string { return "" }}
			changes, said, err := planCDI(t, h, CDIConfig{Enabled: true, SpecPath: tc.specPath})
			require.NoError(t, err)
			require.Len(t, said.notes, 1)
			require.Contains(t, said.notes[0], "nvidia-cdi-refresh owns the nvidia.com/gpu devices: it is enabled (/lib/systemd/system/nvidia-cdi-refresh.service)")
			require.Contains(t, said.notes[0], "systemctl disable --now nvidia-cdi-refresh.path nvidia-cdi-refresh.service")
			if tc.removes == "" {
				require.Empty(t, changes)
				return
			}
			require.Len(t, changes, 1)
			require.Equal(t, []Op{RemoveOp{Path: tc.removes}}, changes[0].Ops)
			require.Contains(t, changes[0].Summary, "nvidia-cdi-refresh's /var/run/cdi/nvidia.yaml defines the same nvidia.com/gpu devices")

			// Apply removes it (with a backup), and the plan is then empty.
			_, err = Apply(context.Background(), h, []Step{newCDIStep(CDIConfig{Enabled: true})}, ApplyOptions{Out: &discard{}})
			require.NoError(t, err)
			require.NoFileExists(t, filepath.Join(root, tc.removes))
			again, _, err := planCDI(t, h, CDIConfig{Enabled: true})
			require.NoError(t, err)
			require.Empty(t, again)
		})
	}
}

func TestCDIWarnsWhenTheRuntimesCDIModeMissesTheRefreshedSpec(t *testing.T) {
	root := t.TempDir()
	plantFiles(t, root, withFiles(refreshed, map[string]string{
		nvidiaRuntimeConfig: "[nvidia-container-runtime]\nmode = \"cdi\"\n[nvidia-container-runtime.modes.cdi]\nspec-dirs = [\"/etc/cdi\"]\n",
	}))
	h := &Host{Root: root, Runner: &RecordingRunner{}, Getenv: func(string) string { return "" }}
	changes, said, err := planCDI(t, h, CDIConfig{Enabled: true})
	require.NoError(t, err)
	require.Empty(t, changes)
	require.Equal(t, []string{`/etc/nvidia-container-runtime/config.toml sets mode = "cdi", and nvidia-container-runtime then reads CDI specs from /etc/cdi only, not from /var/run/cdi/nvidia.yaml where nvidia-cdi-refresh writes: add /var/run/cdi to [nvidia-container-runtime.modes.cdi] spec-dirs`}, said.warnings)
}

func TestCDIOwnsTheDevicesWhenNvidiaCdiRefreshIsOff(t *testing.T) {
	for _, tc := range []struct {
		description string
		files       map[string]string
		note        string
		warning     string
	}{
		{description: "no toolkit 1.18+: nothing to say about ownership"},
		{
			description: "installed but not enabled",
			files:       map[string]string{"/lib/systemd/system/nvidia-cdi-refresh.service": "[Service]\n"},
			note:        "gpu-bootstrap's spec /etc/cdi/nvidia.yaml owns the nvidia.com/gpu devices: nvidia-cdi-refresh (/usr/lib/systemd/system/nvidia-cdi-refresh.service) is not enabled", // /lib is usr/lib on this root
		},
		{
			description: "masked, with its spec of this boot still in /var/run/cdi",
			files: withFiles(refreshUnits, map[string]string{
				"/etc/systemd/system/nvidia-cdi-refresh.service": "->/dev/null",
				"/etc/systemd/system/nvidia-cdi-refresh.path":    "->/dev/null",
				"/var/run/cdi/nvidia.yaml":                       gpuSpec,
			}),
			note:    "is masked (/etc/systemd/system/nvidia-cdi-refresh.service)",
			warning: "/var/run/cdi/nvidia.yaml (left by nvidia-cdi-refresh, which no longer runs) defines the same nvidia.com/gpu devices, and CDI reads /var/run/cdi after /etc/cdi, so it wins over /etc/cdi/nvidia.yaml until the next reboot empties /var/run: remove it (rm /var/run/cdi/nvidia.yaml)",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			plantFiles(t, root, tc.files)
			h := cdiHost(t, fleet, root)
			changes, said, err := planCDI(t, h, CDIConfig{Enabled: true})
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.Contains(t, changes[0].Summary, "write the CDI spec /etc/cdi/nvidia.yaml")
			if tc.note == "" {
				require.Empty(t, said.notes)
			} else {
				require.Len(t, said.notes, 1)
				require.Contains(t, said.notes[0], tc.note)
			}
			if tc.warning == "" {
				require.Empty(t, said.warnings)
			} else {
				require.Equal(t, []string{tc.warning}, said.warnings)
			}
		})
	}
}

func TestCDIKeepsItsSpecWhileTheEnabledRefreshHasWrittenNone(t *testing.T) {
	for _, tc := range []struct {
		description string
		files       map[string]string
		warning     string
	}{
		{
			description: "enabled, but its ExecCondition skipped it, generate failed or the image was built in a chroot",
			files:       refreshUnits,
			warning:     "nvidia-cdi-refresh is enabled but /var/run/cdi/nvidia.yaml does not exist: systemctl status nvidia-cdi-refresh.service",
		},
		{
			description: "the env file's output is missing, though the default path has a spec",
			files:       withFiles(refreshed, map[string]string{cdiRefreshEnvFile: "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/gpus.yaml\n"}),
			warning:     "nvidia-cdi-refresh is enabled but /var/run/cdi/gpus.yaml does not exist: systemctl status nvidia-cdi-refresh.service",
		},
		{
			description: "its output is not a spec of the GPUs",
			files:       withFiles(refreshUnits, map[string]string{cdiRefreshOutput: "cdiVersion: 0.5.0\nkind: vendor.example/fpga\ndevices: []\n"}),
			warning:     "nvidia-cdi-refresh is enabled but /var/run/cdi/nvidia.yaml is a spec of vendor.example/fpga, not of nvidia.com/gpu: systemctl status nvidia-cdi-refresh.service",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			plantFiles(t, root, withFiles(tc.files, map[string]string{DefaultCDISpecPath: gpuSpec}))
			h := cdiHost(t, fleet, root)
			changes, said, err := planCDI(t, h, CDIConfig{Enabled: true})
			require.NoError(t, err)
			// Ours is kept (here: brought up to date), never removed.
			require.Len(t, changes, 1)
			require.Contains(t, changes[0].Summary, "update the CDI spec /etc/cdi/nvidia.yaml")
			require.Len(t, said.warnings, 1)
			require.Contains(t, said.warnings[0], tc.warning)
			require.Empty(t, said.notes)
		})
	}
}

func TestCDIOwnsTheDevicesWhileTheRefreshDoesNotRunAtBoot(t *testing.T) {
	// 1.18 and 1.19 install the units in /etc/systemd/system; here only the
	// path unit is enabled, so nothing writes the spec at boot.
	for _, tc := range []struct {
		description string
		files       map[string]string
		note        string
	}{
		{
			description: "only the path unit enabled",
			files: map[string]string{
				"/etc/systemd/system/nvidia-cdi-refresh.service":                      "[Service]\n",
				"/etc/systemd/system/nvidia-cdi-refresh.path":                         "[Path]\n",
				"/etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.path": "->/etc/systemd/system/nvidia-cdi-refresh.path",
				cdiRefreshOutput: gpuSpec,
			},
			note: "nvidia-cdi-refresh (/etc/systemd/system/nvidia-cdi-refresh.service) is enabled only through nvidia-cdi-refresh.path, which starts it when the driver or the toolkit changes, not at boot",
		},
		{
			description: "the service masked, the path unit enabled",
			files:       withFiles(refreshed, map[string]string{"/etc/systemd/system/nvidia-cdi-refresh.service": "->/dev/null"}),
			note:        "is masked (/etc/systemd/system/nvidia-cdi-refresh.service)",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			plantFiles(t, root, tc.files)
			h := cdiHost(t, fleet, root)
			changes, said, err := planCDI(t, h, CDIConfig{Enabled: true})
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.Contains(t, changes[0].Summary, "write the CDI spec /etc/cdi/nvidia.yaml")
			require.Len(t, said.notes, 1)
			require.Contains(t, said.notes[0], tc.note)
			require.Len(t, said.warnings, 1)
			require.Contains(t, said.warnings[0], "/var/run/cdi/nvidia.yaml (")
			require.Contains(t, said.warnings[0], "until the next reboot empties /var/run: remove it (rm /var/run/cdi/nvidia.yaml)")
		})
	}
}

func TestCDIRefusesASpecBesideTheRefreshsInOneDirectory(t *testing.T) {
	env := map[string]string{cdiRefreshEnvFile: "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia-refresh.yaml\n"}
	for _, tc := range []struct {
		description string
		specPath    string
		files       map[string]string
		err         []string
	}{
		{
			description: "a disabled refresh left its spec in /etc/cdi",
			files: withFiles(env, map[string]string{
				"/lib/systemd/system/nvidia-cdi-refresh.service": "[Service]\n",
				"/etc/cdi/nvidia-refresh.yaml":                   gpuSpec,
			}),
			err: []string{
				"cdi.spec_path: /etc/cdi/nvidia.yaml and nvidia-cdi-refresh's /etc/cdi/nvidia-refresh.yaml",
				"lie in one directory, /etc/cdi",
				"drops them all, and /etc/cdi does not empty at reboot",
				"remove the stale one (rm /etc/cdi/nvidia-refresh.yaml, or rm /etc/cdi/nvidia.yaml and set cdi.spec_path to /etc/cdi/nvidia-refresh.yaml)",
			},
		},
		{
			description: "an enabled refresh that has not written yet would write beside ours",
			files:       withFiles(refreshUnits, env),
			err:         []string{"/etc/cdi/nvidia.yaml and nvidia-cdi-refresh's /etc/cdi/nvidia-refresh.yaml", ": set cdi.spec_path to /etc/cdi/nvidia-refresh.yaml"},
		},
		{
			description: "a disabled refresh left its default spec beside cdi.spec_path in /var/run/cdi",
			specPath:    "/var/run/cdi/gpus.yaml",
			files:       map[string]string{cdiRefreshOutput: gpuSpec},
			err:         []string{"cdi.spec_path: /var/run/cdi/gpus.yaml and nvidia-cdi-refresh's /var/run/cdi/nvidia.yaml lie in one directory, /var/run/cdi; CDI treats the nvidia.com/gpu devices both define as conflicting and drops them all: remove the stale one"},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			plantFiles(t, root, tc.files)
			h := cdiHost(t, fleet, root)
			_, _, err := planCDI(t, h, CDIConfig{Enabled: true, SpecPath: tc.specPath})
			require.Error(t, err)
			for _, want := range tc.err {
				require.ErrorContains(t, err, want)
			}
		})
	}

	t.Run("an enabled refresh that wrote beside ours: ours is removed", func(t *testing.T) {
		root := t.TempDir()
		plantFiles(t, root, withFiles(refreshUnits, withFiles(env, map[string]string{"/etc/cdi/nvidia-refresh.yaml": gpuSpec, DefaultCDISpecPath: gpuSpec})))
		h := &Host{Root: root, Runner: &RecordingRunner{}, Getenv: func(string) string { return "" }}
		changes, _, err := planCDI(t, h, CDIConfig{Enabled: true})
		require.NoError(t, err)
		require.Len(t, changes, 1)
		require.Equal(t, []Op{RemoveOp{Path: DefaultCDISpecPath}}, changes[0].Ops)
	})
}

func TestCDIWarnsOfAStaleRefreshedSpecByItsDirectory(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	root := dgxRoot(t, fleet)
	plantFiles(t, root, map[string]string{
		cdiRefreshEnvFile:              "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia-refresh.yaml\n",
		"/etc/cdi/nvidia-refresh.yaml": gpuSpec,
	})
	h := cdiHost(t, fleet, root)
	changes, said, err := planCDI(t, h, CDIConfig{Enabled: true, SpecPath: "/var/run/cdi/gpus.yaml"})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, []string{"/etc/cdi/nvidia-refresh.yaml (left by nvidia-cdi-refresh, which no longer runs) defines the same nvidia.com/gpu devices as /var/run/cdi/gpus.yaml, and /etc/cdi does not empty at reboot: remove it (rm /etc/cdi/nvidia-refresh.yaml)"}, said.warnings)
}

func TestCDIFollowsTheNvidiaRuntimeMode(t *testing.T) {
	for _, tc := range []struct {
		description string
		config      string // /etc/nvidia-container-runtime/config.toml; "" for none
		dpkgToolkit string // nvidia-container-toolkit-base's version in dpkg's status; "" for none
		specPath    string
		err         string
		note        string // in the change's note; "" when jit-cdi is not mentioned
	}{
		{description: "no config: auto, which 1.18+ resolves to jit-cdi", note: "jit-cdi mode (no /etc/nvidia-container-runtime/config.toml, so the default mode auto)"},
		{description: "auto with toolkit 1.17 installed resolves to legacy", config: "[nvidia-container-runtime]\nmode = \"auto\"\n", dpkgToolkit: "1.17.8-1"},
		{description: "auto with toolkit 1.20 installed", config: "[nvidia-container-runtime]\nmode = \"auto\"\n", dpkgToolkit: "1.20.1-1", note: "jit-cdi mode (/etc/nvidia-container-runtime/config.toml leaves mode at auto)"},
		{description: "jit-cdi set", config: "[nvidia-container-runtime]\nmode = \"jit-cdi\"\n", note: "sets mode = \"jit-cdi\""},
		{description: "legacy set", config: "[nvidia-container-runtime]\nmode = \"legacy\"\n"},
		{description: "cdi mode reads the default spec dirs", config: "[nvidia-container-runtime]\nmode = \"cdi\"\n"},
		{
			description: "cdi mode with the spec outside its spec-dirs",
			config:      "[nvidia-container-runtime]\nmode = \"cdi\"\n\n[nvidia-container-runtime.modes.cdi]\nspec-dirs = [\"/etc/cdi\"]\n",
			specPath:    "/var/run/cdi/nvidia.yaml",
			err:         "cdi.spec_path: /var/run/cdi/nvidia.yaml is not in a directory nvidia-container-runtime reads in its cdi mode",
		},
		{description: "mode that is not text", config: "[nvidia-container-runtime]\nmode = 1\n", err: "mode = 1 is not text"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			files := map[string]string{}
			if tc.config != "" {
				files[nvidiaRuntimeConfig] = tc.config
			}
			if tc.dpkgToolkit != "" {
				files[dpkgStatusPath] = "Package: nvidia-container-toolkit-base\nStatus: install ok installed\nVersion: " + tc.dpkgToolkit + "\n\n"
			}
			plantFiles(t, root, files)
			h := cdiHost(t, fleet, root)
			changes, _, err := planCDI(t, h, CDIConfig{Enabled: true, SpecPath: tc.specPath})
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, changes, 1)
			if tc.note == "" {
				require.NotContains(t, changes[0].Note, "jit-cdi")
			} else {
				require.Contains(t, changes[0].Note, tc.note)
			}
		})
	}
}

func TestCDINotesThatTheToolkitStepBringsTheRefresh(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))
	defer h.beginPlanning(true)()
	h.pending["toolkit"] = true
	_, said, err := h.planStep(context.Background(), newCDIStep(CDIConfig{Enabled: true}))
	require.NoError(t, err)
	require.Len(t, said.notes, 1)
	require.Contains(t, said.notes[0], "its packages enable nvidia-cdi-refresh (1.20 and later; 1.18 and 1.19 only when installed on a running system)")
}

func TestEnvFileValue(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml\n", ""},
		{"NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/a.yaml\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH='/etc/cdi/b.yaml'\n", "/etc/cdi/b.yaml"},
		{"OTHER=1\n NVIDIA_CTK_CDI_OUTPUT_FILE_PATH = \"/run/cdi/x.json\"\n", "/run/cdi/x.json"},
	} {
		require.Equal(t, tc.want, envFileValue([]byte(tc.text), "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH"), tc.text)
	}
}

// withFiles is base with more files added.
func withFiles(base, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestCDIAsksRPMForTheToolkitsVersion: on an RPM node the runtime's mode
// auto follows the toolkit rpm lists, as on a Debian node it follows dpkg's.
func TestCDIAsksRPMForTheToolkitsVersion(t *testing.T) {
	for _, tc := range []struct {
		version string // rpm's answer; "" for not installed
		jitCDI  bool
	}{
		{version: "1.17.8-1", jitCDI: false},
		{version: "1.20.0-1", jitCDI: true},
		{version: "", jitCDI: true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			root := dgxRoot(t, fleet)
			plantFiles(t, root, map[string]string{"/etc/os-release": "ID=\"rocky\"\nVERSION_ID=\"9.4\"\n"})
			h := cdiHost(t, fleet, root)
			runner := &RecordingRunner{}
			if tc.version == "" {
				runner.Reply("rpm -q", Output{ExitCode: 1, Stdout: []byte("package nvidia-container-toolkit-base is not installed\n")})
			} else {
				runner.Reply("rpm -q", Output{Stdout: []byte(tc.version)})
			}
			h.Runner = runner
			changes, _, err := planCDI(t, h, CDIConfig{Enabled: true})
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.Equal(t, tc.jitCDI, strings.Contains(changes[0].Note, "jit-cdi mode"), changes[0].Note)
			require.Len(t, runner.Lines(), 1)
			require.Contains(t, runner.Lines()[0], `rpm -q --queryformat "%{VERSION}-%{RELEASE}" nvidia-container-toolkit-base`)
		})
	}
}

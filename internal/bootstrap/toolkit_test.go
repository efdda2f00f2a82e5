package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	toolkitRPMQuery = `rpm -q --queryformat "%{VERSION}-%{RELEASE}" nvidia-container-toolkit`
	aptGet          = "env DEBIAN_FRONTEND=noninteractive apt-get "
)

// aptKeyringCommands are the commands that set up the repository's signing
// key, NVIDIA's guide without its pipes.
var aptKeyringCommands = []string{
	aptGet + "update",
	aptGet + "install -y --no-install-recommends ca-certificates curl gnupg2",
	"curl -fsSL -o /tmp/nvidia-container-toolkit.gpgkey https://nvidia.github.io/libnvidia-container/gpgkey",
	"gpg --batch --yes --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg /tmp/nvidia-container-toolkit.gpgkey",
}

// TestToolkitPlanCommands is the exact commands per family, with and
// without a version pin, on a root where nothing of the toolkit is installed.
func TestToolkitPlanCommands(t *testing.T) {
	const addRPMRepo = "dnf config-manager --add-repo https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo"
	tests := []struct {
		description string
		osRelease   string
		cfg         ToolkitConfig
		planTime    []string
		changes     [][]string
	}{
		{
			description: "Ubuntu 24.04, newest release: keyring, sources entry, the four packages",
			osRelease:   "ubuntu-24.04",
			cfg:         ToolkitConfig{Install: true},
			changes: [][]string{
				aptKeyringCommands,
				{"file " + toolkitAptListPath},
				{aptGet + "update", aptGet + "install -y nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"},
			},
		},
		{
			description: "Ubuntu 24.04, pinned: every package at <version>-1, as NVIDIA's guide pins",
			osRelease:   "ubuntu-24.04",
			cfg:         ToolkitConfig{Install: true, Version: "1.17.8"},
			changes: [][]string{
				aptKeyringCommands,
				{"file " + toolkitAptListPath},
				{aptGet + "update", aptGet + "install -y nvidia-container-toolkit=1.17.8-1 nvidia-container-toolkit-base=1.17.8-1 libnvidia-container-tools=1.17.8-1 libnvidia-container1=1.17.8-1"},
			},
		},
		{
			description: "Debian 12, newest release: the same repository as Ubuntu",
			osRelease:   "debian-12",
			cfg:         ToolkitConfig{Install: true},
			changes: [][]string{
				aptKeyringCommands,
				{"file " + toolkitAptListPath},
				{aptGet + "update", aptGet + "install -y nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"},
			},
		},
		{
			description: "Debian 12, pinned with the package release given",
			osRelease:   "debian-12",
			cfg:         ToolkitConfig{Install: true, Version: "1.18.0-2"},
			changes: [][]string{
				aptKeyringCommands,
				{"file " + toolkitAptListPath},
				{aptGet + "update", aptGet + "install -y nvidia-container-toolkit=1.18.0-2 nvidia-container-toolkit-base=1.18.0-2 libnvidia-container-tools=1.18.0-2 libnvidia-container1=1.18.0-2"},
			},
		},
		{
			description: "Amazon Linux 2023, newest release: the .repo file, then dnf install",
			osRelease:   "amzn-2023",
			cfg:         ToolkitConfig{Install: true},
			planTime:    []string{toolkitRPMQuery},
			changes: [][]string{
				{addRPMRepo},
				{"dnf -y install nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"},
			},
		},
		{
			description: "Amazon Linux 2023, pinned: name-<version>-1",
			osRelease:   "amzn-2023",
			cfg:         ToolkitConfig{Install: true, Version: "1.17.8"},
			planTime:    []string{toolkitRPMQuery},
			changes: [][]string{
				{addRPMRepo},
				{"dnf -y install nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1"},
			},
		},
		{
			description: "RHEL 9, newest release",
			osRelease:   "rhel-9",
			cfg:         ToolkitConfig{Install: true},
			planTime:    []string{toolkitRPMQuery},
			changes: [][]string{
				{addRPMRepo},
				{"dnf -y install nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"},
			},
		},
		{
			description: "RHEL 9, pinned",
			osRelease:   "rhel-9",
			cfg:         ToolkitConfig{Install: true, Version: "1.17.8"},
			planTime:    []string{toolkitRPMQuery},
			changes: [][]string{
				{addRPMRepo},
				{"dnf -y install nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			h, runner := osReleaseHost(t, tt.osRelease)
			runner.Reply("rpm -q", Output{ExitCode: 1, Stdout: []byte("package nvidia-container-toolkit is not installed\n")})
			changes, err := newToolkitStep(tt.cfg).Plan(context.Background(), h)
			require.NoError(t, err)
			equalLines(t, "changes", changeCommands(changes), tt.changes)
			require.Equal(t, strings.Join(tt.planTime, "\n"), strings.Join(commandLines(runner.Calls), "\n"), "what plan ran to look")
			for _, c := range changes {
				for _, cmd := range commandsOf(c) {
					require.Equal(t, h.Root, cmd.Root, "%s runs on the target (chroot)", cmd)
				}
				if c.File() != nil {
					require.Nil(t, c.File().Old, "the sources entry is created, never rewritten")
					require.Equal(t, "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n"+
						"#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://nvidia.github.io/libnvidia-container/experimental/deb/$(ARCH) /\n",
						string(c.File().New), "what the guide's sed makes of NVIDIA's stable/deb/nvidia-container-toolkit.list")
				}
			}
			last := changes[len(changes)-1]
			want := "(newest release)"
			if tt.cfg.Version != "" {
				want = tt.cfg.packageVersion()
			}
			require.Contains(t, last.Summary, "install the NVIDIA Container Toolkit "+want)
		})
	}
}

// toolkitDpkgStatus is a dpkg status file with nvidia-container-toolkit (and
// its three dependencies) installed at version.
func toolkitDpkgStatus(version string) string {
	var entries [][3]string
	for _, name := range toolkitPackages {
		entries = append(entries, [3]string{name, "install", version})
	}
	return ubuntuDpkgStatus(entries...)
}

// toolkitHost is a host of the release with the repository set up and, when
// version is not empty, the toolkit installed at it (with its runtime binary
// when binary is true).
func toolkitHost(t *testing.T, osRelease, version string, binary bool) (*Host, *RecordingRunner) {
	t.Helper()
	h, runner := osReleaseHost(t, osRelease)
	writeTarget(t, h, toolkitKeyringPath, "keyring", 0o644)
	writeTarget(t, h, toolkitAptListPath, toolkitAptList, 0o644)
	writeTarget(t, h, "/etc/yum.repos.d/nvidia-container-toolkit.repo", "[nvidia-container-toolkit]\n", 0o644)
	if version != "" {
		writeTarget(t, h, dpkgStatusPath, toolkitDpkgStatus(version), 0o644)
		runner.Reply("rpm -q", Output{Stdout: []byte(version)})
	} else {
		runner.Reply("rpm -q", Output{ExitCode: 1})
	}
	if binary {
		writeTarget(t, h, toolkitRuntimeBinary, "#!/bin/sh\n", 0o755)
	}
	return h, runner
}

func TestToolkitPlanNoChangesWhenInstalled(t *testing.T) {
	for _, osRelease := range []string{"ubuntu-24.04", "debian-12", "amzn-2023", "rhel-9"} {
		for _, cfg := range []ToolkitConfig{{Install: true}, {Install: true, Version: "1.17.8"}, {Install: true, Version: "1.17.8-1"}} {
			t.Run(osRelease+" "+cfg.Version, func(t *testing.T) {
				h, _ := toolkitHost(t, osRelease, "1.17.8-1", true)
				changes, err := newToolkitStep(cfg).Plan(context.Background(), h)
				require.NoError(t, err)
				require.Empty(t, changeCommands(changes))
			})
		}
	}
}

// TestToolkitPlanInstallsThePinnedVersion: another version installed is
// replaced by the pinned one (apt is allowed to go down to it), without
// setting up the repository again.
func TestToolkitPlanInstallsThePinnedVersion(t *testing.T) {
	tests := []struct {
		osRelease string
		installed string
		changes   [][]string
	}{
		{"ubuntu-24.04", "1.18.0-1", [][]string{{aptGet + "update", aptGet + "install -y --allow-downgrades nvidia-container-toolkit=1.17.8-1 nvidia-container-toolkit-base=1.17.8-1 libnvidia-container-tools=1.17.8-1 libnvidia-container1=1.17.8-1"}}},
		{"debian-12", "1.16.2-1", [][]string{{aptGet + "update", aptGet + "install -y --allow-downgrades nvidia-container-toolkit=1.17.8-1 nvidia-container-toolkit-base=1.17.8-1 libnvidia-container-tools=1.17.8-1 libnvidia-container1=1.17.8-1"}}},
		{"amzn-2023", "1.18.0-1", [][]string{{"dnf -y install nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1"}}},
		{"rhel-9", "1.16.2-1", [][]string{{"dnf -y install nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.osRelease, func(t *testing.T) {
			h, _ := toolkitHost(t, tt.osRelease, tt.installed, true)
			changes, err := newToolkitStep(ToolkitConfig{Install: true, Version: "1.17.8"}).Plan(context.Background(), h)
			require.NoError(t, err)
			equalLines(t, "changes", changeCommands(changes), tt.changes)
			require.Contains(t, changes[0].Summary, "replace the NVIDIA Container Toolkit "+tt.installed+" with 1.17.8-1")
		})
	}

	t.Run("another package release of the pinned version", func(t *testing.T) {
		h, _ := toolkitHost(t, "rhel-9", "1.17.8-1", true)
		changes, err := newToolkitStep(ToolkitConfig{Install: true, Version: "1.17.8-2"}).Plan(context.Background(), h)
		require.NoError(t, err)
		equalLines(t, "changes", changeCommands(changes), [][]string{{"dnf -y install nvidia-container-toolkit-1.17.8-2 nvidia-container-toolkit-base-1.17.8-2 libnvidia-container-tools-1.17.8-2 libnvidia-container1-1.17.8-2"}})
	})
}

// TestToolkitPlanReinstallsAMissingRuntime: the package at the right version
// without its runtime binary is reinstalled (installing it again would
// change nothing).
func TestToolkitPlanReinstallsAMissingRuntime(t *testing.T) {
	h, _ := toolkitHost(t, "ubuntu-24.04", "1.17.8-1", false)
	changes, err := newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.NoError(t, err)
	equalLines(t, "changes", changeCommands(changes), [][]string{{aptGet + "update", aptGet + "install -y --reinstall nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"}})
	require.Contains(t, changes[0].Summary, "/usr/bin/nvidia-container-runtime is missing")

	h, _ = toolkitHost(t, "amzn-2023", "1.17.8-1", false)
	changes, err = newToolkitStep(ToolkitConfig{Install: true, Version: "1.17.8"}).Plan(context.Background(), h)
	require.NoError(t, err)
	equalLines(t, "changes", changeCommands(changes), [][]string{{"dnf -y reinstall nvidia-container-toolkit-1.17.8-1 nvidia-container-toolkit-base-1.17.8-1 libnvidia-container-tools-1.17.8-1 libnvidia-container1-1.17.8-1"}})
}

// TestToolkitPlanKeepsARepositorySetUpByHand: an existing sources entry
// (here with the experimental line enabled) or keyring is not replaced.
func TestToolkitPlanKeepsARepositorySetUpByHand(t *testing.T) {
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	writeTarget(t, h, toolkitAptListPath, strings.ReplaceAll(toolkitAptList, "#deb", "deb"), 0o644)
	changes, err := newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.NoError(t, err)
	equalLines(t, "changes", changeCommands(changes), [][]string{
		aptKeyringCommands,
		{aptGet + "update", aptGet + "install -y nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1"},
	})

	writeTarget(t, h, toolkitKeyringPath, "keyring", 0o644)
	changes, err = newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.NoError(t, err)
	require.Len(t, changes, 1, "only the install is left: %v", changeCommands(changes))
}

func TestToolkitPlanUnsupportedOS(t *testing.T) {
	h, runner := osReleaseHost(t, "amzn-2")
	_, err := newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	var unsupported *UnsupportedOSError
	require.True(t, errors.As(err, &unsupported), "want an *UnsupportedOSError, got %v", err)
	require.Contains(t, err.Error(), "Amazon Linux 2023")
	require.Empty(t, runner.Calls, "nothing ran")

	h, _ = newTestHost(t)
	writeTarget(t, h, "/etc/os-release", "ID=fedora\nVERSION_ID=42\n", 0o644)
	_, err = newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.True(t, errors.As(err, &unsupported), "want an *UnsupportedOSError, got %v", err)
}

// TestToolkitPlanWithoutOSRelease: a root without os-release (Bottlerocket,
// which ships the toolkit in its image) needs nothing when the runtime is
// there and no version is pinned; a pin cannot be checked there.
func TestToolkitPlanWithoutOSRelease(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, toolkitRuntimeBinary, "#!/bin/sh\n", 0o755)
	changes, err := newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.NoError(t, err)
	require.Empty(t, changes)

	_, err = newToolkitStep(ToolkitConfig{Install: true, Version: "1.17.8"}).Plan(context.Background(), h)
	require.ErrorContains(t, err, "/etc/os-release")

	h, _ = newTestHost(t)
	_, err = newToolkitStep(ToolkitConfig{Install: true}).Plan(context.Background(), h)
	require.ErrorContains(t, err, "/etc/os-release")
}

func TestToolkitConfigValidate(t *testing.T) {
	tests := []struct {
		description string
		cfg         ToolkitConfig
		want        []string // "field: problem fragment"
	}{
		{"Install without a version is valid.", ToolkitConfig{Install: true}, nil},
		{"A release is valid.", ToolkitConfig{Install: true, Version: "1.17.8"}, nil},
		{"A release with its package release is valid.", ToolkitConfig{Install: true, Version: "1.17.8-1"}, nil},
		{"A v prefix is named and its fix given.", ToolkitConfig{Install: true, Version: "v1.17.8"}, []string{`toolkit.version: "v1.17.8" is not a toolkit version (write "1.17.8", without the v)`}},
		{"A word is not a version.", ToolkitConfig{Install: true, Version: "latest"}, []string{`toolkit.version: "latest" is not a toolkit version: give a release as NVIDIA publishes it, such as "1.17.8" or "1.17.8-1" with the package release, or leave it out for the newest`}},
		{"A release candidate is not a stable release.", ToolkitConfig{Install: true, Version: "1.18.0~rc.1"}, []string{`toolkit.version: "1.18.0~rc.1"`}},
		{"A major version alone is not a release.", ToolkitConfig{Install: true, Version: "1"}, []string{"toolkit.version:"}},
		{"A version without install would be ignored.", ToolkitConfig{Version: "1.17.8"}, []string{`toolkit.install: is false, so toolkit.version "1.17.8" would be ignored`}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			requireFieldErrors(t, tc.cfg.validate("toolkit"), tc.want)
		})
	}
}

func TestToolkitConfigThroughConfig(t *testing.T) {
	cfg, err := ParseConfig("node.yaml", []byte("driver:\n  branch: \"580\"\ntoolkit:\n  install: true\n  version: 1.17.8.x\npersistence: true\nruntime:\n  engine: containerd\n"))
	require.NoError(t, err)
	require.ErrorContains(t, cfg.Validate(), `toolkit.version: "1.17.8.x" is not a toolkit version`)

	cfg.Toolkit.Version = "1.17.8"
	require.NoError(t, cfg.Validate())
	var names []string
	for _, step := range cfg.Steps() {
		names = append(names, step.Name())
	}
	require.Equal(t, []string{"driver", "toolkit", "persistence", "runtime"}, names, "the toolkit installs right after the driver, before the runtime that needs it")

	cfg.Toolkit = &ToolkitConfig{Install: false}
	require.NoError(t, cfg.Validate())
	require.Len(t, cfg.Steps(), 3, "install: false runs no toolkit step")
}

func TestToolkitSatisfiedBy(t *testing.T) {
	tests := []struct {
		pin, installed string
		want           bool
	}{
		{"", "1.17.8-1", true},
		{"", "", false},
		{"1.17.8", "1.17.8-1", true},
		{"1.17.8", "1.17.8-2", true},
		{"1.17.8", "1.17.80-1", false},
		{"1.17.8", "1.17.7-1", false},
		{"1.17.8-1", "1.17.8-1", true},
		{"1.17.8-1", "1.17.8-2", false},
		{"1.17.8", "1:1.17.8-1", true},
	}
	for _, tc := range tests {
		got := ToolkitConfig{Install: true, Version: tc.pin}.satisfiedBy(tc.installed)
		require.Equal(t, tc.want, got, "pin %q, installed %q", tc.pin, tc.installed)
	}
}

// TestToolkitThenRuntimeOnAFreshRoot: the runtime step plans its config
// for the binary the pending toolkit install brings, and apply (with a
// runner that installs it as the packages would) ends with a plan that is
// empty and a second apply that changes nothing.
func TestToolkitThenRuntimeOnAFreshRoot(t *testing.T) {
	ctx := context.Background()
	h, _ := osReleaseHost(t, "ubuntu-24.04")
	installer := &toolkitInstaller{h: h}
	h.Runner = installer
	steps := []Step{newToolkitStep(ToolkitConfig{Install: true, Version: "1.17.8"}), newRuntimeStep(RuntimeConfig{Engine: engineContainerd}, nil)}

	plan, err := MakePlan(ctx, h, steps)
	require.NoError(t, err)
	require.Len(t, plan[0].Changes, 3, "keyring, sources entry, install")
	require.Len(t, plan[1].Changes, 1, "the containerd config")

	var out bytes.Buffer
	report, err := Apply(ctx, h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err, out.String())
	require.Equal(t, 4, report.Changes, out.String())
	require.Equal(t, toolkitAptList, readTarget(t, h, toolkitAptListPath))
	require.Contains(t, readTarget(t, h, "/etc/containerd/config.toml"), `BinaryName = "/usr/bin/nvidia-container-runtime"`)

	plan, err = MakePlan(ctx, h, steps)
	require.NoError(t, err)
	require.True(t, plan.Empty(), "after apply: %v", plan)
	out.Reset()
	again, err := Apply(ctx, h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Zero(t, again.Changes, out.String())
}

// toolkitInstaller is a Runner that does on the root what the commands of
// an apt install of the toolkit would: gpg writes the keyring, apt-get
// install writes the dpkg status and the runtime binary. Everything else
// succeeds without output.
type toolkitInstaller struct {
	h *Host
	RecordingRunner
}

func (r *toolkitInstaller) Run(ctx context.Context, c Command) (Output, error) {
	switch {
	case c.Name == "gpg":
		r.write(toolkitKeyringPath, "keyring")
	case c.Name == "env" && len(c.Args) > 2 && c.Args[1] == "apt-get" && c.Args[2] == "install" && strings.Contains(strings.Join(c.Args, " "), "nvidia-container-toolkit="):
		_, version, _ := strings.Cut(c.Args[len(c.Args)-1], "=")
		r.write(dpkgStatusPath, toolkitDpkgStatus(version))
		r.write(toolkitRuntimeBinary, "#!/bin/sh\n")
	}
	return r.RecordingRunner.Run(ctx, c)
}

func (r *toolkitInstaller) write(path, content string) {
	full := r.h.Path(path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		panic(err)
	}
}

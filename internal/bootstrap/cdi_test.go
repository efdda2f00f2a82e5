package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The package's -update flag rewrites golden files. It is defined here only
// if no other test file of the package defined it first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// dgxBusIDs are the PCI addresses of a DGX A100's eight GPUs.
var dgxBusIDs = []string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0", "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"}

// plantFiles creates files under root: a value of "->target" makes a
// symbolic link, a key ending in "*" an executable.
func plantFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
	}
}

// dgxRoot is the file system of a DGX A100 with driver 550.54.15 as the CDI
// step reads it: device nodes (regular files stand in for them), the
// driver's /proc information files, DRM nodes in sysfs and /dev/dri, the
// libraries with their SONAME links on a merged-/usr layout, binaries,
// firmware and the persistenced socket.
func dgxRoot(t *testing.T, fleet *nvmltest.Fleet) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"/lib":                  "->usr/lib",
		"/dev/nvidiactl":        "",
		"/dev/nvidia-uvm":       "",
		"/dev/nvidia-uvm-tools": "",
		"/dev/nvidia-modeset":   "",

		"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15":                  "elf",
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1":                          "->libcuda.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libcuda.so":                            "->libcuda.so.1",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15":             "elf",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1":                     "->libnvidia-ml.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.550.54.15": "elf",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1":         "->libnvidia-ptxjitcompiler.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so.550.54.15":           "elf",
		"/usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so.4":                   "->libnvidia-nvvm.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libnvidia-opticalflow.so.550.54.15":    "elf",
		"/usr/lib/x86_64-linux-gnu/libnvidia-opticalflow.so.1":            "->libnvidia-opticalflow.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.550.54.15":    "elf",
		"/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1":            "->libvdpau_nvidia.so.550.54.15",
		// Left over from the previous driver: not this driver's, not mounted.
		"/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01": "elf",

		"/usr/bin/nvidia-smi*":              "",
		"/usr/bin/nvidia-debugdump*":        "",
		"/usr/bin/nvidia-persistenced*":     "",
		"/usr/bin/nvidia-cuda-mps-control*": "",
		"/usr/bin/nvidia-cuda-mps-server*":  "",
		"/usr/bin/nvidia-cdi-hook*":         "",
		"/usr/bin/nvidia-imex":              "not executable: not mounted",

		"/usr/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin": "",
		"/usr/lib/firmware/nvidia/550.54.15/gsp_tu10x.bin": "",
		"/run/nvidia-persistenced/socket":                  "",
	}
	for i, bus := range dgxBusIDs {
		card, render := fmt.Sprintf("card%d", i+1), fmt.Sprintf("renderD%d", 128+i)
		files[fmt.Sprintf("/dev/nvidia%d", i)] = ""
		files["/proc/driver/nvidia/gpus/"+bus+"/information"] = fmt.Sprintf(
			"Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 0\nGPU UUID: \t GPU-00000000-0000-4000-8000-%012d\nVideo BIOS: \t 92.00.25.00.08\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n", i, bus, i)
		files["/sys/bus/pci/devices/"+bus+"/drm/"+card+"/dev"] = ""
		files["/sys/bus/pci/devices/"+bus+"/drm/"+render+"/dev"] = ""
		files["/dev/dri/"+card] = ""
		files["/dev/dri/"+render] = ""
		files["/dev/dri/by-path/pci-"+bus+"-card"] = "->../" + card
		files["/dev/dri/by-path/pci-"+bus+"-render"] = "->../" + render
	}
	plantFiles(t, root, files)
	return root
}

func cdiHost(t *testing.T, fleet *nvmltest.Fleet, root string) *Host {
	t.Helper()
	return &Host{
		Root:   root,
		GPUs:   nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: t.TempDir()}),
		Runner: &RecordingRunner{},
		Getenv: func(string) string { return "" },
		Now:    func() time.Time { return time.Date(2026, 11, 22, 7, 18, 0, 0, time.UTC) },
	}
}

func TestCDISpecOfADGXA100MatchesTheGoldenFile(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))

	changes, err := newCDIStep(CDIConfig{Enabled: true}).Plan(context.Background(), h)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, "/etc/cdi/nvidia.yaml", changes[0].File().Path)
	require.True(t, changes[0].File().Created())
	require.Equal(t, "write the CDI spec /etc/cdi/nvidia.yaml (nvidia.com/gpu: 8 GPUs, driver 550.54.15)", changes[0].Summary)

	golden := filepath.Join("testdata", "cdi", "dgxa100.golden.yaml")
	if updateGolden() {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, changes[0].File().New, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -run TestCDISpec -update to create it")
	require.Equal(t, string(want), string(changes[0].File().New), "the spec differs from %s (go test -update rewrites it)", golden)
}

func TestCDISpecFollowsTheCDISpecification(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))
	changes, err := newCDIStep(CDIConfig{Enabled: true}).Plan(context.Background(), h)
	require.NoError(t, err)

	var spec specs.Spec
	require.NoError(t, yaml.Unmarshal(changes[0].File().New, &spec))
	require.NoError(t, specs.ValidateVersion(&spec), "cdiVersion must cover the features used")
	require.Equal(t, "0.5.0", spec.Version, "device names starting with a digit need 0.5.0, and nothing newer is used")
	require.Equal(t, "nvidia.com/gpu", spec.Kind)

	names := map[string]specs.Device{}
	for _, d := range spec.Devices {
		names[d.Name] = d
	}
	require.Len(t, spec.Devices, 17, "8 by index, 8 by UUID, all")
	gpu3 := names["3"]
	require.Equal(t, names["GPU-00000000-0000-4000-8000-000000000003"].ContainerEdits, gpu3.ContainerEdits)
	require.Equal(t, []string{"/dev/nvidia3", "/dev/dri/card4", "/dev/dri/renderD131"}, nodePaths(gpu3.ContainerEdits))
	require.Equal(t, []string{"nvidia-cdi-hook", "create-symlinks",
		"--link", "../card4::/dev/dri/by-path/pci-0000:4e:00.0-card",
		"--link", "../renderD131::/dev/dri/by-path/pci-0000:4e:00.0-render"}, gpu3.ContainerEdits.Hooks[0].Args)
	require.Len(t, nodePaths(names["all"].ContainerEdits), 24, "all has every GPU's nodes")

	common := spec.ContainerEdits
	require.Equal(t, []string{"/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"}, nodePaths(common))
	require.Contains(t, common.Env, "NVIDIA_VISIBLE_DEVICES=void")
	mounts := map[string]*specs.Mount{}
	for _, m := range common.Mounts {
		mounts[m.ContainerPath] = m
		require.Equal(t, m.ContainerPath, m.HostPath, "paths are target paths, never prefixed with --root")
		require.NotContains(t, m.HostPath, h.Root)
	}
	for _, p := range []string{
		"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.550.54.15",
		"/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.550.54.15",
		"/usr/bin/nvidia-smi",
		"/usr/bin/nvidia-persistenced",
		"/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin",
	} {
		require.Contains(t, mounts, p)
		require.Equal(t, []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}, mounts[p].Options)
	}
	require.Contains(t, mounts, "/run/nvidia-persistenced/socket")
	require.Contains(t, mounts["/run/nvidia-persistenced/socket"].Options, "noexec")
	require.NotContains(t, mounts, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01", "another driver's library")
	require.NotContains(t, mounts, "/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "the /lib link to /usr/lib must not mount a library twice")
	require.NotContains(t, mounts, "/usr/bin/nvidia-imex", "not executable")

	require.Len(t, common.Hooks, 2)
	require.Equal(t, "createContainer", common.Hooks[0].HookName)
	require.Equal(t, "/usr/bin/nvidia-cdi-hook", common.Hooks[0].Path)
	require.Equal(t, []string{"nvidia-cdi-hook", "create-symlinks",
		"--link", "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so",
		"--link", "libcuda.so.550.54.15::/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"--link", "libnvidia-ml.so.550.54.15::/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
		"--link", "libnvidia-nvvm.so.550.54.15::/usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so.4",
		"--link", "libnvidia-opticalflow.so.1::/usr/lib/x86_64-linux-gnu/libnvidia-opticalflow.so",
		"--link", "libnvidia-opticalflow.so.550.54.15::/usr/lib/x86_64-linux-gnu/libnvidia-opticalflow.so.1",
		"--link", "libnvidia-ptxjitcompiler.so.550.54.15::/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1",
		"--link", "libvdpau_nvidia.so.550.54.15::/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1",
	}, common.Hooks[0].Args)
	require.Equal(t, []string{"nvidia-cdi-hook", "update-ldcache",
		"--folder", "/usr/lib/x86_64-linux-gnu",
		"--folder", "/usr/lib/x86_64-linux-gnu/vdpau",
	}, common.Hooks[1].Args)
}

func nodePaths(e specs.ContainerEdits) []string {
	var paths []string
	for _, n := range e.DeviceNodes {
		paths = append(paths, n.Path)
	}
	return paths
}

func TestCDIApplyTwiceChangesNothingTheSecondTime(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))
	steps := []Step{newCDIStep(CDIConfig{Enabled: true, SpecPath: "/var/run/cdi/nvidia-gpus.yaml"})}

	var out bytes.Buffer
	report, err := Apply(context.Background(), h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Equal(t, 1, report.Changes)
	written, err := os.ReadFile(filepath.Join(h.Root, "var/run/cdi/nvidia-gpus.yaml"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(h.Root, "var/run/cdi/nvidia-gpus.yaml"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	out.Reset()
	report, err = Apply(context.Background(), h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Zero(t, report.Changes)
	require.Contains(t, out.String(), "cdi: up to date")
	again, err := os.ReadFile(filepath.Join(h.Root, "var/run/cdi/nvidia-gpus.yaml"))
	require.NoError(t, err)
	require.Equal(t, written, again)
}

func TestCDIPlanComparesMeaningNotBytes(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))
	step := newCDIStep(CDIConfig{Enabled: true})
	changes, err := step.Plan(context.Background(), h)
	require.NoError(t, err)

	// The same spec as nvidia-ctk would lay it out: another key order,
	// other indents, no comment.
	var spec map[string]any
	require.NoError(t, yaml.Unmarshal(changes[0].File().New, &spec))
	reordered, err := yaml.Marshal(spec)
	require.NoError(t, err)
	require.NotEqual(t, string(changes[0].File().New), string(reordered))
	plantFiles(t, h.Root, map[string]string{"/etc/cdi/nvidia.yaml": string(reordered)})

	changes, err = step.Plan(context.Background(), h)
	require.NoError(t, err)
	require.Empty(t, changes, "a spec that says the same thing is left alone")

	// A control node going away changes the meaning.
	require.NoError(t, os.Remove(filepath.Join(h.Root, "dev/nvidia-modeset")))
	changes, err = step.Plan(context.Background(), h)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.True(t, strings.HasPrefix(changes[0].Summary, "update the CDI spec /etc/cdi/nvidia.yaml"), changes[0].Summary)
	require.Equal(t, reordered, changes[0].File().Old)
	require.NotContains(t, string(changes[0].File().New), "/dev/nvidia-modeset")
}

func TestCDIPlanLeavesAnUnparsableSpecAlone(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h := cdiHost(t, fleet, dgxRoot(t, fleet))
	plantFiles(t, h.Root, map[string]string{"/etc/cdi/nvidia.yaml": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: 5\n"})

	_, err := newCDIStep(CDIConfig{Enabled: true}).Plan(context.Background(), h)
	var parseErr *ParseError
	require.ErrorAs(t, err, &parseErr)
	require.Equal(t, "/etc/cdi/nvidia.yaml", parseErr.Path)
	require.Equal(t, 3, parseErr.Line)
	require.Contains(t, err.Error(), "left unchanged")
}

func TestCDITakesTheMinorNumberFromTheDriverNotTheIndex(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	root := dgxRoot(t, fleet)
	// The driver numbered GPU 0 /dev/nvidia1 and GPU 1 /dev/nvidia0.
	for i, minor := range map[int]int{0: 1, 1: 0} {
		p := filepath.Join(root, "proc/driver/nvidia/gpus", dgxBusIDs[i], "information")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		data = bytes.Replace(data, []byte(fmt.Sprintf("Device Minor: \t %d", i)), []byte(fmt.Sprintf("Device Minor: \t %d", minor)), 1)
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	h := cdiHost(t, fleet, root)
	spec, err := generateCDISpec(h, mustSnapshot(t, h))
	require.NoError(t, err)
	for _, d := range spec.Devices {
		switch d.Name {
		case "0":
			require.Equal(t, "/dev/nvidia1", d.ContainerEdits.DeviceNodes[0].Path)
		case "1":
			require.Equal(t, "/dev/nvidia0", d.ContainerEdits.DeviceNodes[0].Path)
		}
	}
}

func TestCDIUsesNvidiaCtkHookOnOlderToolkits(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	root := dgxRoot(t, fleet)
	require.NoError(t, os.Remove(filepath.Join(root, "usr/bin/nvidia-cdi-hook")))
	plantFiles(t, root, map[string]string{"/usr/bin/nvidia-ctk*": ""})
	h := cdiHost(t, fleet, root)
	spec, err := generateCDISpec(h, mustSnapshot(t, h))
	require.NoError(t, err)
	hook := spec.ContainerEdits.Hooks[1]
	require.Equal(t, "/usr/bin/nvidia-ctk", hook.Path)
	require.Equal(t, []string{"nvidia-ctk", "hook", "update-ldcache"}, hook.Args[:3])
}

func mustSnapshot(t *testing.T, h *Host) nvml.Snapshot {
	t.Helper()
	snap, err := h.GPUs.Snapshot()
	require.NoError(t, err)
	return snap
}

func TestCDIWithoutADriver(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Server.InitFunc = func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }
	h := cdiHost(t, fleet, t.TempDir())
	step := newCDIStep(CDIConfig{Enabled: true})

	t.Run("the driver step has work pending: the spec is planned after it", func(t *testing.T) {
		plan, err := MakePlan(context.Background(), h, []Step{pendingStep{"driver"}, step})
		require.NoError(t, err)
		require.Len(t, plan[1].Changes, 1)
		require.Equal(t, "write the CDI spec /etc/cdi/nvidia.yaml after the driver is installed", plan[1].Changes[0].Summary)
		require.NotNil(t, plan[1].Changes[0].Action())
	})
	t.Run("no driver step: an error that says CDI needs the driver", func(t *testing.T) {
		_, err := step.Plan(context.Background(), h)
		require.Error(t, err)
		require.Contains(t, err.Error(), "needs the NVIDIA driver")
		require.Contains(t, err.Error(), "libnvidia-ml.so.1 not found")
	})
	t.Run("the planned change writes the spec once the driver is there", func(t *testing.T) {
		plan, err := MakePlan(context.Background(), h, []Step{pendingStep{"driver"}, step})
		require.NoError(t, err)
		fleet.Server.InitFunc = func() gonvml.Return { return gonvml.SUCCESS } // the driver was installed
		require.NoError(t, plan[1].Changes[0].Action()(context.Background(), h))
		require.True(t, h.Exists("/etc/cdi/nvidia.yaml"))
	})
}

// pendingStep is a step that always has one change, standing in for a
// driver step that still has to install the driver.
type pendingStep struct{ name string }

func (s pendingStep) Name() string { return s.name }
func (s pendingStep) Plan(context.Context, *Host) ([]Change, error) {
	return []Change{{Summary: "install the driver", Ops: []Op{ActionOp(func(context.Context, *Host) error { return errors.New("not in tests") })}}}, nil
}

func TestCDIConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		description string
		cfg         CDIConfig
		problem     string
	}{
		{description: "the default path is valid", cfg: CDIConfig{Enabled: true}},
		{description: "an absolute .yaml path is valid", cfg: CDIConfig{Enabled: true, SpecPath: "/var/run/cdi/nvidia.yaml"}},
		{description: "a .json path is valid", cfg: CDIConfig{Enabled: true, SpecPath: "/etc/cdi/nvidia.json"}},
		{description: "a relative path is refused", cfg: CDIConfig{Enabled: true, SpecPath: "etc/cdi/nvidia.yaml"}, problem: `cdi.spec_path: "etc/cdi/nvidia.yaml" is not an absolute path`},
		{description: "an unclean path is refused", cfg: CDIConfig{Enabled: true, SpecPath: "/etc/cdi/../cdi/nvidia.yaml"}, problem: "write /etc/cdi/nvidia.yaml"},
		{description: "a name engines would not load is refused", cfg: CDIConfig{Enabled: true, SpecPath: "/etc/cdi/nvidia.conf"}, problem: "must end in .yaml or .json"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			err := (&Config{CDI: &tc.cfg}).Validate()
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.problem)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "cdi.spec_path", fe.Field)
		})
	}
}

func TestCDIFindsFilesUnderARootWithGlobCharacters(t *testing.T) {
	root := filepath.Join(t.TempDir(), "image[1]")
	plantFiles(t, root, map[string]string{
		"/usr/lib64/libcuda.so.550.54.15": "elf",
		"/usr/lib64/libcuda.so.1":         "->libcuda.so.550.54.15",
	})
	h := &Host{Root: root}
	require.Equal(t, []string{"/usr/lib64/libcuda.so.550.54.15"}, cdiDriverLibraries(h, "550.54.15"))
	require.Equal(t, "libcuda.so.1", h.soname("/usr/lib64/libcuda.so.550.54.15"))
}

func TestCDIReadsTheSONAMEFromAnELFLibrary(t *testing.T) {
	var libc []byte
	for _, candidate := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib64/libc.so.6"} {
		if data, err := os.ReadFile(candidate); err == nil {
			libc = data
			break
		}
	}
	if libc == nil {
		t.Skip("no glibc shared object on this machine to read a SONAME from")
	}
	root := t.TempDir()
	// A real ELF object whose DT_SONAME (libc.so.6) differs from its file
	// name: the SONAME comes from the ELF, not from the name or the links.
	plantFiles(t, root, map[string]string{"/usr/lib64/libc.so.550.54.15": string(libc)})
	h := &Host{Root: root}
	require.Equal(t, "libc.so.6", h.soname("/usr/lib64/libc.so.550.54.15"))
}

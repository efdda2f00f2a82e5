package bootstrap

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// verifyMachine is the machine a Verify case runs on.
type verifyMachine struct {
	noDriver bool              // libnvidia-ml.so.1 cannot be loaded
	pci      map[string]string // PCI address -> bound driver ("" for none) of NVIDIA GPUs in sysfs
	env      string            // NVIDIA_VISIBLE_DEVICES
	files    map[string]string // files under the root, e.g. /.dockerenv
	change   func(*nvmltest.Fleet)
}

func (m verifyMachine) host(t *testing.T) *Host {
	t.Helper()
	fleet := nvmltest.NewDGXA100()
	if m.noDriver {
		fleet.Server.InitFunc = func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }
	}
	if m.change != nil {
		m.change(fleet)
	}
	sysfs := t.TempDir()
	files := map[string]string{}
	for addr, driver := range m.pci {
		dir := "/bus/pci/devices/" + addr + "/"
		files[dir+"vendor"] = "0x10de\n"
		files[dir+"device"] = "0x20b0\n"
		files[dir+"class"] = "0x030200\n"
		if driver != "" {
			files[dir+"driver"] = "->../../../bus/pci/drivers/" + driver
		}
	}
	plantFiles(t, sysfs, files)
	root := t.TempDir()
	plantFiles(t, root, m.files)
	h := cdiHost(t, fleet, root)
	h.GPUs = nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: sysfs})
	h.Getenv = func(key string) string {
		if key == "NVIDIA_VISIBLE_DEVICES" {
			return m.env
		}
		return ""
	}
	return h
}

func TestVerify(t *testing.T) {
	const uuid3 = "GPU-00000000-0000-4000-8000-000000000003"
	for _, tc := range []struct {
		description string
		machine     verifyMachine
		cfg         Config
		status      string
		message     string   // exact, when set
		problems    []string // exact list, when set
		contains    []string // problems that must be among others
		checks      []string // checks that must be listed
	}{
		{
			description: "a healthy DGX A100 with the GPU count it is expected to have",
			cfg:         Config{Verify: VerifyConfig{ExpectGPUs: 8}},
			status:      HealthHealthy,
			message:     "healthy: 8 GPUs, driver 550.54.15",
			checks: []string{
				"NVIDIA driver 550.54.15 loaded (CUDA 12.4)",
				"8 GPUs, as expected",
				"GPU 3 (" + uuid3 + "): no uncorrected ECC errors, nothing waiting for a reset",
			},
		},
		{
			description: "a healthy node inside a container that was given every GPU",
			machine:     verifyMachine{env: "all"},
			status:      HealthHealthy,
			checks:      []string{"8 GPUs"},
		},
		{
			description: "CPU only: no variable, no GPU on the bus, none expected",
			machine:     verifyMachine{noDriver: true},
			status:      HealthCPUOnly,
			message:     "CPU only: NVIDIA_VISIBLE_DEVICES is unset and no NVIDIA PCI device found, no GPU expected",
		},
		{
			description: "CPU only: the NVIDIA runtime said void",
			machine:     verifyMachine{noDriver: true, env: "void"},
			status:      HealthCPUOnly,
			message:     "CPU only: NVIDIA_VISIBLE_DEVICES is void, no GPU expected",
		},
		{
			description: "CPU only: a container given no GPU on a GPU host sees the host's GPUs in sysfs",
			machine:     verifyMachine{noDriver: true, env: "void", pci: map[string]string{"0000:07:00.0": "nvidia"}},
			status:      HealthCPUOnly,
			message:     "CPU only: NVIDIA_VISIBLE_DEVICES is void, no GPU expected",
		},
		{
			description: "CPU only: a container without the variable on a GPU host",
			machine:     verifyMachine{noDriver: true, files: map[string]string{"/.dockerenv": ""}, pci: map[string]string{"0000:07:00.0": "nvidia"}},
			status:      HealthCPUOnly,
			message:     "CPU only: a container without NVIDIA_VISIBLE_DEVICES, no GPU expected",
		},
		{
			description: "a container given GPUs whose driver is gone is unhealthy",
			machine:     verifyMachine{noDriver: true, env: "all", files: map[string]string{"/.dockerenv": ""}, pci: map[string]string{"0000:07:00.0": "nvidia"}},
			status:      HealthUnhealthy,
			contains:    []string{"no NVIDIA driver loaded"},
		},
		{
			description: "GPUs on the PCI bus of a bare node but no driver is unhealthy",
			machine:     verifyMachine{noDriver: true, pci: map[string]string{"0000:07:00.0": "", "0000:0f:00.0": "vfio-pci"}},
			status:      HealthUnhealthy,
			problems: []string{
				"no NVIDIA driver loaded (libnvidia-ml.so.1 not found); NVIDIA PCI devices found: 0000:07:00.0 [10de:20b0, no driver], 0000:0f:00.0 [10de:20b0, vfio-pci]",
			},
		},
		{
			description: "no driver and no GPU on the bus, but GPUs are expected",
			machine:     verifyMachine{noDriver: true, env: "void"},
			cfg:         Config{Verify: VerifyConfig{ExpectGPUs: 8}},
			status:      HealthUnhealthy,
			problems:    []string{"no NVIDIA driver loaded (libnvidia-ml.so.1 not found); no NVIDIA PCI device found"},
		},
		{
			description: "expecting 8 GPUs where NVML lists 7",
			machine: verifyMachine{change: func(f *nvmltest.Fleet) {
				f.Server.DeviceGetCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
			}},
			cfg:      Config{Verify: VerifyConfig{ExpectGPUs: 8}},
			status:   HealthUnhealthy,
			message:  "unhealthy: expected 8 GPUs (verify.expect_gpus), NVML lists 7",
			problems: []string{"expected 8 GPUs (verify.expect_gpus), NVML lists 7"},
		},
		{
			description: "an uncorrected ECC error on GPU 3 names GPU 3 and its UUID",
			machine:     verifyMachine{change: func(f *nvmltest.Fleet) { f.GPUs[3].VolatileECC = 2 }},
			status:      HealthUnhealthy,
			problems:    []string{"GPU 3 (" + uuid3 + ") has 2 uncorrected ECC errors since the driver loaded; drain the node, then reset the GPU or reboot"},
		},
		{
			description: "rows waiting to be remapped and a failed remapping",
			machine: verifyMachine{change: func(f *nvmltest.Fleet) {
				f.GPUs[1].RemapPending = true
				f.GPUs[2].RemapFailure = true
			}},
			status: HealthUnhealthy,
			problems: []string{
				"GPU 1 (GPU-00000000-0000-4000-8000-000000000001) has memory rows waiting to be remapped; reset the GPU (nvidia-smi -r -i 1) or reboot",
				"GPU 2 (GPU-00000000-0000-4000-8000-000000000002) failed to remap memory rows; the GPU should be replaced",
			},
		},
		{
			description: "a GPU fallen off the bus",
			machine:     verifyMachine{change: func(f *nvmltest.Fleet) { f.GPUs[6].Lost = true }},
			status:      HealthUnhealthy,
			contains:    []string{"GPU 6"},
		},
		{
			description: "persistence mode off where the config wants it on",
			machine:     verifyMachine{change: func(f *nvmltest.Fleet) { f.GPUs[0].Persistence = false }},
			cfg:         Config{Persistence: boolOpt(true)},
			status:      HealthUnhealthy,
			contains:    []string{"GPU 0 (GPU-00000000-0000-4000-8000-000000000000) has persistence mode off but persistence is true"},
		},
		{
			description: "a configured step with changes left",
			cfg:         Config{GPU: &GPUSettingsConfig{ComputeMode: "Exclusive_Process"}},
			status:      HealthUnhealthy,
			problems:    []string{"gpu: not configured: set compute mode Exclusive_Process on GPUs 0-7 (now Default) (run gpu-bootstrap apply)"},
		},
		{
			description: "a configured step that cannot plan",
			cfg:         Config{GPU: &GPUSettingsConfig{PowerLimitWatts: wattsOpt(500)}},
			status:      HealthUnhealthy,
			problems:    []string{"gpu: gpu.power_limit_watts: 500 W is outside the range GPUs 0-7 allow: 100–400 W"},
		},
		{
			description: "configured steps that match are listed as checks",
			cfg:         Config{GPU: &GPUSettingsConfig{ComputeMode: "Default"}},
			status:      HealthHealthy,
			checks:      []string{"gpu: configured"},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			h := tc.machine.host(t)
			health := Verify(context.Background(), h, &tc.cfg)
			require.Equal(t, tc.status, health.Status, "problems: %q", health.Problems)
			if tc.message != "" {
				require.Equal(t, tc.message, health.Message)
			}
			if tc.problems != nil {
				require.Equal(t, tc.problems, health.Problems)
			}
			for _, p := range tc.contains {
				require.True(t, anyContains(health.Problems, p), "no problem mentions %q in %q", p, health.Problems)
			}
			for _, c := range tc.checks {
				require.Contains(t, health.Checks, c)
			}
			wantExit := 0
			if tc.status == HealthUnhealthy {
				wantExit = 1
				require.True(t, strings.HasPrefix(health.Message, "unhealthy: "+health.Problems[0]), health.Message)
			}
			require.Equal(t, wantExit, health.ExitCode())
		})
	}
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func boolOpt(b bool) *bool { return &b }

func TestVerifyDriverBranch(t *testing.T) {
	snap := nvml.Snapshot{Driver: nvml.Driver{Loaded: true, Version: "535.183.01", CUDAVersion: "12.2"}}

	v := &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "550"}}, lifecycleToday)
	require.Equal(t, []string{"driver branch is 535 (535.183.01) but driver.branch is 550; run gpu-bootstrap apply and reboot"}, v.problems)

	v = &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "535"}}, lifecycleToday)
	require.Empty(t, v.problems)
	require.Contains(t, v.checks, "driver branch 535 as configured")
}

func TestVerifyConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		description string
		expect      int
		problem     string
	}{
		{description: "zero means at least one GPU", expect: 0},
		{description: "a GPU count is valid", expect: 8},
		{description: "a negative count is refused, naming the field", expect: -1, problem: "verify.expect_gpus: -1 is negative"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			err := (&Config{Verify: VerifyConfig{ExpectGPUs: tc.expect}}).Validate()
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.problem)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "verify.expect_gpus", fe.Field)
		})
	}
}

package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

func gpuHost(t *testing.T, fleet *nvmltest.Fleet) *Host {
	t.Helper()
	return cdiHost(t, fleet, t.TempDir())
}

func wattsOpt(w uint32) *uint32 { return &w }

func planGPU(t *testing.T, h *Host, cfg GPUSettingsConfig) ([]Change, error) {
	t.Helper()
	return newGPUSettingsStep(cfg).Plan(context.Background(), h)
}

func changeSummaries(changes []Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Summary
	}
	return out
}

func TestGPUSettingsOnAHostThatMatchesPlanNothing(t *testing.T) {
	fleet := nvmltest.NewDGXA100() // Default compute mode, 400 W, 1215/1410 MHz, MIG off
	h := gpuHost(t, fleet)
	changes, err := planGPU(t, h, GPUSettingsConfig{
		ComputeMode:       "default",
		PowerLimitWatts:   wattsOpt(400),
		ApplicationClocks: &ApplicationClocksConfig{MemoryMHz: 1215, GraphicsMHz: 1410},
		MIG:               &MIGConfig{Enabled: false},
	})
	require.NoError(t, err)
	require.Empty(t, changeSummaries(changes))
}

func TestGPUSettingsApplyThenASecondApplyChangesNothing(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[5].ComputeMode = gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS // already as wanted
	h := gpuHost(t, fleet)
	steps := []Step{newGPUSettingsStep(GPUSettingsConfig{
		ComputeMode:       "Exclusive_Process",
		PowerLimitWatts:   wattsOpt(300),
		ApplicationClocks: &ApplicationClocksConfig{MemoryMHz: 1215, GraphicsMHz: 1095},
	})}

	plan, err := MakePlan(context.Background(), h, steps)
	require.NoError(t, err)
	require.Equal(t, []string{
		"set compute mode Exclusive_Process on GPUs 0-4, 6, 7 (now Default)",
		"set the power limit to 300 W on GPUs 0-7 (now 400 W)",
		"set application clocks to 1215 MHz memory, 1095 MHz graphics on GPUs 0-7 (now 1215/1410 MHz)",
	}, changeSummaries(plan[0].Changes))

	var out bytes.Buffer
	report, err := Apply(context.Background(), h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Equal(t, 3, report.Changes)
	for i, gpu := range fleet.GPUs {
		require.Equal(t, gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS, gpu.ComputeMode, "GPU %d", i)
		require.Equal(t, uint32(300000), gpu.PowerLimitMW, "GPU %d", i)
		require.Equal(t, uint32(1095), gpu.AppGraphicsMHz, "GPU %d", i)
	}
	require.Contains(t, out.String(), "keep persistence mode on")

	out.Reset()
	report, err = Apply(context.Background(), h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Zero(t, report.Changes)
	require.Contains(t, out.String(), "gpu: up to date")
}

func TestGPUSettingsPowerLimitIsCheckedAgainstEachGPUsRange(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[3].PowerMaxMW = 300000
	h := gpuHost(t, fleet)

	_, err := planGPU(t, h, GPUSettingsConfig{PowerLimitWatts: wattsOpt(350)})
	require.Error(t, err)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "gpu.power_limit_watts", fe.Field)
	require.Equal(t, "gpu.power_limit_watts: 350 W is outside the range GPU 3 (GPU-00000000-0000-4000-8000-000000000003) allows: 100–300 W", err.Error())

	_, err = planGPU(t, h, GPUSettingsConfig{PowerLimitWatts: wattsOpt(50)})
	require.ErrorContains(t, err, "gpu.power_limit_watts: 50 W is outside the range GPUs 0-2, 4-7 allow: 100–400 W")
	require.ErrorContains(t, err, "GPU 3 (GPU-00000000-0000-4000-8000-000000000003) allows: 100–300 W")
	require.Equal(t, uint32(400000), fleet.GPUs[0].PowerLimitMW, "nothing was set")
}

func TestGPUSettingsApplicationClocksAboveTheMaximumAreRefused(t *testing.T) {
	fleet := nvmltest.NewDGXA100() // maximum 1215 MHz memory, 1410 MHz graphics
	h := gpuHost(t, fleet)
	_, err := planGPU(t, h, GPUSettingsConfig{ApplicationClocks: &ApplicationClocksConfig{MemoryMHz: 1215, GraphicsMHz: 1500}})
	require.ErrorContains(t, err, "gpu.application_clocks.graphics_mhz: 1500 MHz is above the maximum graphics clock of GPU 0 (GPU-00000000-0000-4000-8000-000000000000), 1410 MHz")
}

func TestGPUSettingsLostGPUIsNotConfigured(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[2].Lost = true
	h := gpuHost(t, fleet)
	_, err := planGPU(t, h, GPUSettingsConfig{ComputeMode: "Prohibited"})
	require.ErrorContains(t, err, "GPU 2")
	require.ErrorContains(t, err, "reset it (nvidia-smi -r) or reboot")
	require.Equal(t, gonvml.COMPUTEMODE_DEFAULT, fleet.GPUs[0].ComputeMode)
}

func TestGPUSettingsWithoutADriver(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Server.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	h := gpuHost(t, fleet)
	step := newGPUSettingsStep(GPUSettingsConfig{ComputeMode: "Default"})

	plan, err := MakePlan(context.Background(), h, []Step{pendingStep{"driver"}, step})
	require.NoError(t, err)
	require.Equal(t, []string{"apply the GPU settings after the driver is installed"}, changeSummaries(plan[1].Changes))

	_, err = step.Plan(context.Background(), h)
	require.ErrorContains(t, err, "GPU settings are made through the NVIDIA driver: NVIDIA driver not loaded (kernel module missing)")
}

// migState makes a mocked GPU's MIG mode switch only after a "reset", as an
// A100 in a VM does: SetMigMode changes the pending mode and answers
// ERROR_RESET_REQUIRED as its activation status.
type migState struct {
	mu               sync.Mutex
	current, pending int
}

func (m *migState) wire(dev *dgxa100.Device) {
	dev.GetMigModeFunc = func() (int, int, gonvml.Return) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.current, m.pending, gonvml.SUCCESS
	}
	dev.SetMigModeFunc = func(mode int) (gonvml.Return, gonvml.Return) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.pending = mode
		return gonvml.ERROR_RESET_REQUIRED, gonvml.SUCCESS
	}
}

func (m *migState) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current = m.pending
}

func migProfiles(t *testing.T, h *Host, index int) []string {
	t.Helper()
	snap, err := h.GPUs.Snapshot()
	require.NoError(t, err)
	var names []string
	for _, d := range snap.Devices[index].MIG.Devices {
		names = append(names, d.Profile)
	}
	sort.Strings(names)
	return names
}

func TestGPUSettingsMIGSwitchingAtOnce(t *testing.T) {
	fleet := nvmltest.NewDGXA100() // go-nvml's mock switches MIG mode at once
	h := gpuHost(t, fleet)
	steps := []Step{newGPUSettingsStep(GPUSettingsConfig{MIG: &MIGConfig{
		Enabled: true, Profiles: []string{"3g.20gb", "3g.20gb"}, GPUs: []int{1, 0},
	}})}

	plan, err := MakePlan(context.Background(), h, steps)
	require.NoError(t, err)
	require.Equal(t, []string{
		"enable MIG mode on GPUs 0, 1",
		"lay out MIG instances 3g.20gb, 3g.20gb on GPU 0 (GPU-00000000-0000-4000-8000-000000000000) once its MIG mode is on",
		"lay out MIG instances 3g.20gb, 3g.20gb on GPU 1 (GPU-00000000-0000-4000-8000-000000000001) once its MIG mode is on",
	}, changeSummaries(plan[0].Changes))
	require.Contains(t, plan[0].Changes[0].Note, "takes effect after a GPU reset or reboot")

	report, err := Apply(context.Background(), h, steps, ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, report.Changes)
	require.Equal(t, []string{"3g.20gb", "3g.20gb"}, migProfiles(t, h, 0))
	require.Equal(t, []string{"3g.20gb", "3g.20gb"}, migProfiles(t, h, 1))
	require.Empty(t, migProfiles(t, h, 2), "GPU 2 was not selected")

	report, err = Apply(context.Background(), h, steps, ApplyOptions{})
	require.NoError(t, err)
	require.Zero(t, report.Changes)

	// Another layout replaces the instances; GPUs already in MIG mode are not switched again.
	changes, err := planGPU(t, h, GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, Profiles: []string{"7g.40gb"}, GPUs: []int{0}}})
	require.NoError(t, err)
	require.Equal(t, []string{"lay out MIG instances 7g.40gb on GPU 0 (GPU-00000000-0000-4000-8000-000000000000) (now 3g.20gb, 3g.20gb)"}, changeSummaries(changes))

	// A GPU with a process on it keeps its instances.
	fleet.GPUs[0].Processes = []gonvml.ProcessInfo{{Pid: 4242}}
	_, err = planGPU(t, h, GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, Profiles: []string{"7g.40gb"}, GPUs: []int{0}}})
	require.ErrorContains(t, err, "GPU 0 (GPU-00000000-0000-4000-8000-000000000000) has 1 process(es) running (pid 4242")
	fleet.GPUs[0].Processes = nil

	// Disabling removes the instances first, then switches MIG off.
	report, err = Apply(context.Background(), h, []Step{newGPUSettingsStep(GPUSettingsConfig{MIG: &MIGConfig{Enabled: false}})}, ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, report.Changes)
	snap, err := h.GPUs.Snapshot()
	require.NoError(t, err)
	require.False(t, snap.Devices[0].MIG.Current)
	require.False(t, snap.Devices[1].MIG.Current)
}

func TestGPUSettingsMIGSwitchWaitingForAReset(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	state := &migState{}
	state.wire(fleet.Device(0))
	h := gpuHost(t, fleet)
	cfg := &Config{GPU: &GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, Profiles: []string{"1g.5gb", "1g.5gb", "2g.10gb"}, GPUs: []int{0}}}}
	steps := cfg.Steps()

	var out bytes.Buffer
	report, err := Apply(context.Background(), h, steps, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Equal(t, 2, report.Changes)
	require.Equal(t, gonvml.DEVICE_MIG_ENABLE, state.pending)
	require.Equal(t, gonvml.DEVICE_MIG_DISABLE, state.current)
	require.Contains(t, out.String(), "run `gpu-bootstrap apply` again after it to lay out the MIG instances")

	// Before the reset: nothing more to do, but check says why the GPU is not ready.
	report, err = Apply(context.Background(), h, steps, ApplyOptions{})
	require.NoError(t, err)
	require.Zero(t, report.Changes, "a pending switch is not made again")
	health := Verify(context.Background(), h, cfg)
	require.Equal(t, HealthUnhealthy, health.Status)
	require.Contains(t, health.Problems, "GPU 0 (GPU-00000000-0000-4000-8000-000000000000) has a MIG mode switch to on waiting for a reset; reset the GPU (nvidia-smi -r -i 0) or reboot")

	// After the reset the instances are laid out.
	state.reset()
	changes, err := planGPU(t, h, *cfg.GPU)
	require.NoError(t, err)
	require.Equal(t, []string{"lay out MIG instances 1g.5gb, 1g.5gb, 2g.10gb on GPU 0 (GPU-00000000-0000-4000-8000-000000000000) (now none)"}, changeSummaries(changes))
	_, err = Apply(context.Background(), h, steps, ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"1g.5gb", "1g.5gb", "2g.10gb"}, migProfiles(t, h, 0))
	require.Equal(t, HealthHealthy, Verify(context.Background(), h, cfg).Status)
}

func TestGPUSettingsMIGGPUsMustExistAndSupportMIG(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	noMIG := fleet.Device(2)
	noMIG.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED }
	h := gpuHost(t, fleet)

	_, err := planGPU(t, h, GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, GPUs: []int{9, 2}}})
	require.ErrorContains(t, err, "gpu.mig.gpus[0]: there is no GPU 9; this host has GPUs 0-7")
	require.ErrorContains(t, err, "gpu.mig.gpus[1]: GPU 2 (GPU-00000000-0000-4000-8000-000000000002) (Mock NVIDIA A100-SXM4-40GB) does not support MIG")
	var fe *FieldError
	require.True(t, errors.As(err, &fe))
}

func TestGPUSettingsValidation(t *testing.T) {
	for _, tc := range []struct {
		description string
		cfg         GPUSettingsConfig
		problems    []string // each a "field: problem" substring; none means valid
	}{
		{description: "nvidia-smi's names in any case are valid", cfg: GPUSettingsConfig{ComputeMode: "EXCLUSIVE_PROCESS"}},
		{description: "a dash for the underscore is valid", cfg: GPUSettingsConfig{ComputeMode: "exclusive-process"}},
		{description: "an unknown compute mode names the choices", cfg: GPUSettingsConfig{ComputeMode: "exclusive"},
			problems: []string{`gpu.compute_mode: "exclusive" is not a compute mode; valid values are Default, Exclusive_Process, Prohibited`}},
		{description: "nvidia-smi's numbers get the name to write", cfg: GPUSettingsConfig{ComputeMode: "3"},
			problems: []string{`gpu.compute_mode: "3" is nvidia-smi's number for Exclusive_Process; write Exclusive_Process`}},
		{description: "exclusive thread is gone", cfg: GPUSettingsConfig{ComputeMode: "Exclusive_Thread"},
			problems: []string{`gpu.compute_mode: "Exclusive_Thread" is no longer supported by NVML; use Exclusive_Process`}},
		{description: "a zero power limit is refused", cfg: GPUSettingsConfig{PowerLimitWatts: wattsOpt(0)},
			problems: []string{"gpu.power_limit_watts: must be a positive number of watts"}},
		{description: "application clocks need both clocks", cfg: GPUSettingsConfig{ApplicationClocks: &ApplicationClocksConfig{MemoryMHz: 1215}},
			problems: []string{"gpu.application_clocks.graphics_mhz: must be set"}},
		{description: "MIG profiles as nvidia-smi lists them are valid", cfg: GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, Profiles: []string{"1g.5gb", "1g.10gb+me", "3G.20GB", "1g.12gb+me.all", "1g.5gb-me", "1g.24gb+gfx", "7g.80gb"}}}},
		{description: "malformed MIG profiles are named by position", cfg: GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, Profiles: []string{"1g.5gb", "3g20gb", "1c.3g.20gb", "0g.5gb"}}},
			problems: []string{`gpu.mig.profiles[1]: "3g20gb" is not a GPU instance profile`, `gpu.mig.profiles[2]: "1c.3g.20gb"`, `gpu.mig.profiles[3]: "0g.5gb"`}},
		{description: "profiles without MIG mode are refused", cfg: GPUSettingsConfig{MIG: &MIGConfig{Enabled: false, Profiles: []string{"1g.5gb"}}},
			problems: []string{"gpu.mig.profiles: MIG instances need MIG mode; set gpu.mig.enabled: true"}},
		{description: "negative and repeated GPU indexes are refused", cfg: GPUSettingsConfig{MIG: &MIGConfig{Enabled: true, GPUs: []int{0, -1, 0}}},
			problems: []string{"gpu.mig.gpus[1]: -1 is not a GPU index", "gpu.mig.gpus[2]: GPU 0 is listed twice"}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			err := (&Config{GPU: &tc.cfg}).Validate()
			if len(tc.problems) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, p := range tc.problems {
				require.ErrorContains(t, err, p)
			}
			require.Len(t, strings.Split(err.Error(), "\n"), len(tc.problems))
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
}

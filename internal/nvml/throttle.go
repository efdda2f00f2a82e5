package nvml

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// ThrottleReason is one bit of NVML's clocks event (throttle) reasons, with
// the name nvidia-smi gives its `--query-gpu` column
// (clocks_throttle_reasons.<Name>) and what it means.
type ThrottleReason struct {
	Bit  uint64
	Name string
	// Slowdown is true for reasons that hold the clocks below what the
	// work asks for; idle and a user's clock setting are not slowdowns.
	Slowdown bool
	Meaning  string
}

// ThrottleReasons lists the reasons in nvidia-smi's order.
var ThrottleReasons = []ThrottleReason{
	{gonvml.ClocksEventReasonGpuIdle, "gpu_idle", false, "nothing is running on the GPU"},
	{gonvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting", false, "clocks held by the application clocks setting"},
	{gonvml.ClocksEventReasonSwPowerCap, "sw_power_cap", true, "power capped: the draw reached the power limit"},
	{gonvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown", true, "hardware slowdown (temperature, power brake or a power supply fault)"},
	{gonvml.ClocksEventReasonSyncBoost, "sync_boost", true, "held to the clocks of the GPUs it is sync-boosted with"},
	{gonvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown", true, "software thermal slowdown: GPU or memory temperature above its limit"},
	{gonvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown", true, "hardware thermal slowdown: the GPU is too hot"},
	{gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", true, "hardware power brake: the system's power supply asked the GPU to slow down"},
	{gonvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting", false, "clocks held by the display clock setting"},
}

// ThrottleReasonNames spells a reasons mask as the names of its set bits,
// in nvidia-smi's order; bits NVML may add later are left out.
func ThrottleReasonNames(mask uint64) []string {
	var names []string
	for _, r := range ThrottleReasons {
		if mask&r.Bit != 0 {
			names = append(names, r.Name)
		}
	}
	return names
}

// SlowdownMask is the part of a reasons mask that slows work down.
func SlowdownMask(mask uint64) uint64 {
	var out uint64
	for _, r := range ThrottleReasons {
		if r.Slowdown {
			out |= mask & r.Bit
		}
	}
	return out
}

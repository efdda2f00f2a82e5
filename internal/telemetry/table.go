package telemetry

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// The table format: Frame is the live view a terminal redraws each sample,
// Lines the same readings one line per GPU for a log or a pipe. Both say
// "n/a (MIG)" for a MIG device's utilization: NVML has no per-instance
// utilization, and a zero would read as idle.

const migNoUtilization = "n/a (MIG)"

// Frame is one sample as a table with units, one row per GPU and one per
// MIG device under its GPU, followed by the most recent events.
func Frame(s nvml.TelemetrySample, recent []nvml.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  driver %s (CUDA %s)  %d GPU%s\n\n", Timestamp(s.Time), s.Driver.Version, s.Driver.CUDAVersion, len(s.GPUs), plural(len(s.GPUs)))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tNAME\tUTIL\tMEM UTIL\tMEMORY USED / TOTAL\tTEMP\tPOWER / LIMIT\tSM CLOCK\tMEM CLOCK\tPCIe TX / RX\tTHROTTLE\tPROCS")
	for _, g := range s.GPUs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
			g.Index, gpuName(g), optional(g.UtilizationGPU, "%d %%"), optional(g.UtilizationMemory, "%d %%"),
			memory(g.MemoryUsedMiB, g.MemoryTotalMiB), optional(g.TemperatureC, "%d °C"), power(g),
			optional(g.SMClockMHz, "%d MHz"), optional(g.MemoryClockMHz, "%d MHz"), pcie(g), throttle(g), len(processes(g)))
		for _, m := range g.MIG {
			fmt.Fprintf(tw, "\t  MIG %s (GI %d CI %d)\t%s\t%s\t%s\t\t\t\t\t\t\t%d\n",
				m.Profile, m.GPUInstanceID, m.ComputeInstanceID, migNoUtilization, migNoUtilization,
				memory(m.MemoryUsedMiB, migTotal(m)), len(m.Processes))
		}
	}
	tw.Flush()
	if len(recent) > 0 {
		b.WriteString("\nRecent events:\n")
		for _, ev := range recent {
			b.WriteString("  " + EventLine(ev) + "\n")
		}
	}
	return b.String()
}

// Lines are one sample as one line per GPU (and per MIG device), each
// starting with the sample's time, with no escape codes.
func Lines(s nvml.TelemetrySample) string {
	var b strings.Builder
	at := Timestamp(s.Time)
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "%s GPU %d %s: util %s, mem util %s, memory %s, temp %s, power %s, sm %s, mem clock %s, pcie tx/rx %s, throttle %s, procs %d\n",
			at, g.Index, gpuName(g), optional(g.UtilizationGPU, "%d %%"), optional(g.UtilizationMemory, "%d %%"),
			memory(g.MemoryUsedMiB, g.MemoryTotalMiB), optional(g.TemperatureC, "%d °C"), power(g),
			optional(g.SMClockMHz, "%d MHz"), optional(g.MemoryClockMHz, "%d MHz"), pcie(g), throttle(g), len(processes(g)))
		for _, m := range g.MIG {
			fmt.Fprintf(&b, "%s GPU %d MIG %s (GI %d CI %d): util %s, memory %s, procs %d\n",
				at, g.Index, m.Profile, m.GPUInstanceID, m.ComputeInstanceID, migNoUtilization,
				memory(m.MemoryUsedMiB, migTotal(m)), len(m.Processes))
		}
	}
	return b.String()
}

func gpuName(g nvml.GPUSample) string {
	name := g.Name
	if name == "" {
		name = g.UUID
	}
	if g.Lost {
		name += " (LOST: needs a reset or a reboot)"
	}
	return name
}

func optional[T any](v *T, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

func memory(used, total *uint64) string {
	switch {
	case used != nil && total != nil:
		return fmt.Sprintf("%d / %d MiB", *used, *total)
	case used != nil:
		return fmt.Sprintf("%d MiB", *used)
	case total != nil:
		return fmt.Sprintf("n/a / %d MiB", *total)
	}
	return "n/a"
}

func migTotal(m nvml.MIGSample) *uint64 {
	if m.MemoryMiB == 0 {
		return nil
	}
	total := m.MemoryMiB
	return &total
}

func power(g nvml.GPUSample) string {
	switch {
	case g.PowerDrawW != nil && g.PowerLimitW != nil:
		return fmt.Sprintf("%.0f / %.0f W", *g.PowerDrawW, *g.PowerLimitW)
	case g.PowerDrawW != nil:
		return fmt.Sprintf("%.0f W", *g.PowerDrawW)
	}
	return "n/a"
}

// pcie is PCIe throughput in MB/s (NVML reports KB/s over a 20 ms window).
func pcie(g nvml.GPUSample) string {
	if g.PCIeTxKBps == nil || g.PCIeRxKBps == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f / %.1f MB/s", float64(*g.PCIeTxKBps)/1000, float64(*g.PCIeRxKBps)/1000)
}

// throttle names the active slowdown reasons; "-" when none, "n/a" when
// NVML gave no reasons.
func throttle(g nvml.GPUSample) string {
	if g.ThrottleReasons == nil {
		return "n/a"
	}
	names := nvml.ThrottleReasonNames(nvml.SlowdownMask(*g.ThrottleReasons))
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

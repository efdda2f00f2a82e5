package telemetry

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// CSV is nvidia-smi's `--query-gpu=... --format=csv` output for the
// columns of csvColumns, so a script written for nvidia-smi reads it
// unchanged: the header names as nvidia-smi prints them (the canonical
// name, "clocks.current.sm", even when the query said "clocks.sm"; the unit
// in brackets, kept under nounits as nvidia-smi keeps it), values with
// their unit ("45 %", "61.23 W", "1410 MHz"), "[N/A]" where NVML gave no
// reading, and ", " between fields.
//
// NVML readings nvidia-smi has no --query-gpu name for (PCIe throughput,
// per-process memory, MIG devices) are left out rather than given made-up
// names; the json format has them.
type CSV struct {
	// NoHeader and NoUnits are nvidia-smi's csv,noheader and csv,nounits.
	NoHeader, NoUnits bool
}

// ParseCSVFormat reads nvidia-smi's --format spelling: "csv" optionally
// followed by ",noheader" and ",nounits" in any order.
func ParseCSVFormat(format string) (CSV, bool) {
	parts := strings.Split(format, ",")
	if parts[0] != "csv" {
		return CSV{}, false
	}
	var c CSV
	for _, opt := range parts[1:] {
		switch strings.TrimSpace(opt) {
		case "noheader":
			c.NoHeader = true
		case "nounits":
			c.NoUnits = true
		default:
			return CSV{}, false
		}
	}
	return c, true
}

type csvColumn struct {
	name  string // nvidia-smi's header name, without the unit
	unit  string // "" for unitless values (temperature.gpu prints none)
	value func(t time.Time, g nvml.GPUSample) (string, bool)
}

// csvColumns are the columns, in order. temperature.gpu has no unit in
// nvidia-smi's header or values.
var csvColumns = []csvColumn{
	{"timestamp", "", func(t time.Time, _ nvml.GPUSample) (string, bool) { return Timestamp(t), true }},
	{"index", "", func(_ time.Time, g nvml.GPUSample) (string, bool) { return strconv.Itoa(g.Index), true }},
	{"uuid", "", func(_ time.Time, g nvml.GPUSample) (string, bool) { return g.UUID, g.UUID != "" }},
	{"name", "", func(_ time.Time, g nvml.GPUSample) (string, bool) { return g.Name, g.Name != "" }},
	{"pci.bus_id", "", func(_ time.Time, g nvml.GPUSample) (string, bool) { return NVMLBusID(g.PCIBusID), g.PCIBusID != "" }},
	{"utilization.gpu", "%", gpuValue(func(g nvml.GPUSample) *uint32 { return g.UtilizationGPU })},
	{"utilization.memory", "%", gpuValue(func(g nvml.GPUSample) *uint32 { return g.UtilizationMemory })},
	{"memory.total", "MiB", gpuValue(func(g nvml.GPUSample) *uint64 { return g.MemoryTotalMiB })},
	{"memory.used", "MiB", gpuValue(func(g nvml.GPUSample) *uint64 { return g.MemoryUsedMiB })},
	{"memory.free", "MiB", gpuValue(func(g nvml.GPUSample) *uint64 { return g.MemoryFreeMiB })},
	{"temperature.gpu", "", gpuValue(func(g nvml.GPUSample) *uint32 { return g.TemperatureC })},
	{"temperature.memory", "", gpuValue(func(g nvml.GPUSample) *uint32 { return g.MemoryTemperatureC })},
	{"power.draw", "W", wattsValue(func(g nvml.GPUSample) *float64 { return g.PowerDrawW })},
	{"power.limit", "W", wattsValue(func(g nvml.GPUSample) *float64 { return g.PowerLimitW })},
	{"clocks.current.sm", "MHz", gpuValue(func(g nvml.GPUSample) *uint32 { return g.SMClockMHz })},
	{"clocks.current.memory", "MHz", gpuValue(func(g nvml.GPUSample) *uint32 { return g.MemoryClockMHz })},
	{"clocks.current.graphics", "MHz", gpuValue(func(g nvml.GPUSample) *uint32 { return g.GraphicsClockMHz })},
	// nvidia-smi (R535 and later) prints clocks_event_reasons.active for
	// both this name and the older clocks_throttle_reasons.active.
	{"clocks_event_reasons.active", "", func(_ time.Time, g nvml.GPUSample) (string, bool) {
		if g.ThrottleReasons == nil {
			return "", false
		}
		return fmt.Sprintf("0x%016X", *g.ThrottleReasons), true
	}},
	{"ecc.errors.corrected.volatile.total", "", gpuValue(func(g nvml.GPUSample) *uint64 { return g.ECC.CorrectedVolatile })},
	{"ecc.errors.uncorrected.volatile.total", "", gpuValue(func(g nvml.GPUSample) *uint64 { return g.ECC.UncorrectedVolatile })},
}

func gpuValue[T uint32 | uint64](field func(nvml.GPUSample) *T) func(time.Time, nvml.GPUSample) (string, bool) {
	return func(_ time.Time, g nvml.GPUSample) (string, bool) {
		v := field(g)
		if v == nil {
			return "", false
		}
		return strconv.FormatUint(uint64(*v), 10), true
	}
}

// wattsValue prints watts with two decimals, as nvidia-smi does.
func wattsValue(field func(nvml.GPUSample) *float64) func(time.Time, nvml.GPUSample) (string, bool) {
	return func(_ time.Time, g nvml.GPUSample) (string, bool) {
		v := field(g)
		if v == nil {
			return "", false
		}
		return strconv.FormatFloat(*v, 'f', 2, 64), true
	}
}

// notAvailable is what nvidia-smi prints for a reading it cannot give.
const notAvailable = "[N/A]"

// Header is the header line, or nothing under noheader.
func (c CSV) Header() string {
	if c.NoHeader {
		return ""
	}
	names := make([]string, len(csvColumns))
	for i, col := range csvColumns {
		names[i] = col.name
		if col.unit != "" {
			names[i] += " [" + col.unit + "]"
		}
	}
	return strings.Join(names, ", ") + "\n"
}

// Rows are one line per GPU of a sample, stamped with the sample's time.
func (c CSV) Rows(s nvml.TelemetrySample) string {
	var b strings.Builder
	for _, g := range s.GPUs {
		for i, col := range csvColumns {
			if i > 0 {
				b.WriteString(", ")
			}
			v, ok := col.value(s.Time, g)
			switch {
			case !ok:
				v = notAvailable
			case col.unit != "" && !c.NoUnits:
				v += " " + col.unit
			}
			b.WriteString(csvField(v))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// csvField quotes a value that holds a comma or a quote (nvidia-smi never
// does; no GPU name has one), so the line stays parseable.
func csvField(v string) string {
	if !strings.ContainsAny(v, ",\"\n") {
		return v
	}
	return `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
}

// NVMLBusID spells a sysfs PCI address ("0000:07:00.0") as NVML and
// nvidia-smi do: an eight-digit domain and upper-case hex
// ("00000000:07:00.0").
func NVMLBusID(sysfs string) string {
	domain, rest, ok := strings.Cut(sysfs, ":")
	if !ok {
		return strings.ToUpper(sysfs)
	}
	if len(domain) < 8 {
		domain = strings.Repeat("0", 8-len(domain)) + domain
	}
	return strings.ToUpper(domain + ":" + rest)
}

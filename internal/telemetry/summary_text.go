package telemetry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// Text is the summary for a person: a table of min / mean / max per GPU,
// throttling shares, peak memory, events and findings.
func (s Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summary: %d sample%s", s.Samples, plural(s.Samples))
	if s.Samples > 0 {
		fmt.Fprintf(&b, " from %s to %s", Timestamp(s.Start), Timestamp(s.End))
	}
	fmt.Fprintf(&b, ", %d GPU%s\n", len(s.GPUs), plural(len(s.GPUs)))
	if len(s.GPUs) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GPU\tNAME\tUTIL %\tMEM UTIL %\tMEMORY USED MiB\tTEMP °C\tPOWER W\tSM CLOCK MHz")
		fmt.Fprintln(tw, "\t\tmin/mean/max\tmin/mean/max\tmin/mean/max\tmin/mean/max\tmin/mean/max\tmin/mean/max")
		for _, g := range s.GPUs {
			util := stat(g.UtilizationGPU, 0)
			if g.MIG {
				util += " (whole GPU)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Index, g.Name, util, stat(g.UtilizationMemory, 0),
				stat(g.MemoryUsedMiB, 0), stat(g.TemperatureC, 0), stat(g.PowerDrawW, 1), stat(g.SMClockMHz, 0))
		}
		tw.Flush()
	}
	b.WriteString("\nThrottling (share of samples):")
	throttled := false
	for _, g := range s.GPUs {
		if len(g.Throttle) == 0 {
			continue
		}
		throttled = true
		var parts []string
		for _, t := range g.Throttle {
			parts = append(parts, fmt.Sprintf("%s %s (%d of %d)", t.Reason, percentText(t.Percent), t.Samples, g.Samples))
		}
		fmt.Fprintf(&b, "\n  GPU %d: %s", g.Index, strings.Join(parts, ", "))
	}
	if !throttled {
		b.WriteString(" none")
	}
	b.WriteString("\n\nPeak memory:\n")
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "  GPU %d: %s\n", g.Index, peak(g.PeakMemory))
	}
	b.WriteString("\nEvents:")
	if len(s.EventCounts) == 0 {
		b.WriteString(" none")
	} else {
		var counts []string
		for _, kind := range slices.Sorted(maps.Keys(s.EventCounts)) {
			counts = append(counts, fmt.Sprintf("%s %d", kind, s.EventCounts[kind]))
		}
		b.WriteString(" " + strings.Join(counts, ", "))
	}
	b.WriteString("\n")
	for _, ev := range s.Events {
		b.WriteString("  " + EventLine(ev) + "\n")
	}
	b.WriteString("\nFindings:")
	if len(s.Findings) == 0 {
		b.WriteString(" none: no GPU lost, no XID, no slowdown or memory pressure worth a word\n")
	} else {
		b.WriteString("\n")
		for _, f := range s.Findings {
			b.WriteString("  - " + f + "\n")
		}
	}
	return b.String()
}

// stat spells min/mean/max; the mean always with one decimal.
func stat(s *Stat, decimals int) string {
	if s == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.*f/%.1f/%.*f", decimals, s.Min, s.Mean, decimals, s.Max)
}

func peak(p *PeakMemory) string {
	if p == nil {
		return "n/a"
	}
	out := fmt.Sprintf("%d MiB", p.UsedMiB)
	if p.TotalMiB != nil {
		out += fmt.Sprintf(" of %d MiB", *p.TotalMiB)
	}
	out += " at " + clock(p.Time)
	if p.Process == nil {
		return out + ", no process listed"
	}
	return out + ", most held by " + process(*p.Process)
}

func process(p nvml.Process) string {
	name := ""
	if p.Name != "" {
		name = " (" + p.Name + ")"
	}
	return fmt.Sprintf("pid %d%s with %d MiB", p.PID, name, p.UsedMemoryMiB)
}

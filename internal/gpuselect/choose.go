package gpuselect

import (
	"fmt"
	"sort"
	"strings"
)

// Choice is the GPUs chosen for a request, in index order, and why.
type Choice struct {
	GPUs []GPU `json:"gpus"`
	// Link is the slowest link between two chosen GPUs in `nvidia-smi topo
	// -m` terms ("NV12", "PXB", ...); "" for one GPU.
	Link string `json:"link,omitempty"`
	// Rejected says why each GPU that was not eligible was turned down.
	Rejected []Rejection `json:"rejected,omitempty"`
}

// UUIDs are the chosen GPUs' UUIDs in index order.
func (c Choice) UUIDs() []string {
	out := make([]string, len(c.GPUs))
	for i, g := range c.GPUs {
		out[i] = g.UUID
	}
	return out
}

// Rejection is one GPU turned down and the reason.
type Rejection struct {
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	Reason string `json:"reason"`
}

// NoChoiceError says why no set of GPUs satisfies a request.
type NoChoiceError struct {
	Request  Request
	Eligible []GPU
	Rejected []Rejection
	Total    int
}

func (e *NoChoiceError) Error() string {
	var b strings.Builder
	switch {
	case e.Total == 0:
		fmt.Fprintf(&b, "no GPU on this machine: NVML lists none")
		return b.String()
	case len(e.Eligible) == 0:
		fmt.Fprintf(&b, "no GPU satisfies the request (%s): none of the %d GPUs qualifies", e.Request.describe(), e.Total)
	default:
		indices := make([]string, len(e.Eligible))
		for i, g := range e.Eligible {
			indices[i] = fmt.Sprint(g.Index)
		}
		fmt.Fprintf(&b, "%d GPUs asked for (%s), but only %d of the %d qualify (GPU %s)",
			e.Request.Count, e.Request.describe(), len(e.Eligible), e.Total, strings.Join(indices, ", "))
	}
	for _, r := range e.Rejected {
		fmt.Fprintf(&b, "\n  GPU %d (%s): %s", r.Index, r.UUID, r.Reason)
	}
	return b.String()
}

// describe spells a request for messages.
func (r Request) describe() string {
	parts := []string{fmt.Sprintf("count %d", r.Count)}
	if r.MinFreeMiB > 0 {
		parts = append(parts, "at least "+formatMiB(r.MinFreeMiB)+" free")
	}
	if r.Product != "" {
		parts = append(parts, fmt.Sprintf("product %q", r.Product))
	}
	if r.ExcludeBusy {
		parts = append(parts, fmt.Sprintf("not busy (no process, under %d%% utilized)", r.BusyUtilization))
	}
	return strings.Join(parts, ", ")
}

// Choose picks req.Count GPUs of m (see the package comment for the rules).
// The error is a *NoChoiceError when no set satisfies the request.
func Choose(req Request, m Machine) (Choice, error) {
	if err := req.Validate(); err != nil {
		return Choice{}, err
	}
	var eligible []GPU
	var rejected []Rejection
	for _, g := range m.GPUs {
		if reason := req.rejects(g); reason != "" {
			rejected = append(rejected, Rejection{Index: g.Index, UUID: g.UUID, Reason: reason})
			continue
		}
		eligible = append(eligible, g)
	}
	if len(eligible) < req.Count {
		return Choice{}, &NoChoiceError{Request: req, Eligible: eligible, Rejected: rejected, Total: len(m.GPUs)}
	}
	links := newLinkTable(m.Links)
	best := bestSet(req, eligible, links)
	choice := Choice{Rejected: rejected}
	for _, i := range best.members {
		choice.GPUs = append(choice.GPUs, eligible[i])
	}
	sort.Slice(choice.GPUs, func(i, j int) bool { return choice.GPUs[i].Index < choice.GPUs[j].Index })
	if req.Count > 1 {
		choice.Link = best.bottleneckLevel
	}
	return choice, nil
}

// rejects says why a GPU cannot serve the request; "" when it can.
func (r Request) rejects(g GPU) string {
	switch {
	case g.Unusable != "":
		return g.Unusable
	case g.MIG:
		return "MIG mode is on: its UUID cannot be given to a container whole (select a MIG device, or turn MIG off)"
	case r.Product != "" && !strings.Contains(strings.ToLower(g.Name), strings.ToLower(r.Product)):
		return fmt.Sprintf("%s is not a %q", g.Name, r.Product)
	case g.FreeMiB < r.MinFreeMiB:
		return fmt.Sprintf("%s free of %s, needs %s", formatMiB(g.FreeMiB), formatMiB(g.TotalMiB), formatMiB(r.MinFreeMiB))
	case r.ExcludeBusy && g.Processes > 0:
		return fmt.Sprintf("busy: %d process(es) running on it", g.Processes)
	case r.ExcludeBusy && g.UtilizationPercent != nil && *g.UtilizationPercent >= r.BusyUtilization:
		return fmt.Sprintf("busy: %d%% utilized (the limit is under %d%%)", *g.UtilizationPercent, r.BusyUtilization)
	}
	return ""
}

// formatMiB spells MiB as GiB with one decimal from 1 GiB up.
func formatMiB(mib uint64) string {
	if mib >= 1024 {
		return fmt.Sprintf("%.1f GiB", float64(mib)/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

package dcgm

import (
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// ContentType is the Content-Type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Pass is what one exposition is written from: a sample and what is known
// beside it.
type Pass struct {
	Sample nvml.TelemetrySample
	// Hostname is the host label's value; "" leaves it out.
	Hostname string
	// HostnameLabel is the label's name or names: hostname (the zero
	// value), Hostname, or both.
	HostnameLabel HostnameLabel
	// XIDs is the last XID NVML reported per GPU, by GPU UUID.
	XIDs map[string]uint64
	// Holders is the container holding each device, by GPU UUID or MIG
	// device UUID (podresources.Lister.Devices); nil off Kubernetes.
	Holders map[string]podresources.Container
}

// Write writes p in the text exposition format: each field in the order of
// dcgm-exporter's counters file, a HELP and a TYPE line before its series,
// GPUs by index and MIG instances by GPU instance ID. Fields with no series
// are left out entirely. The output depends only on p.
func Write(w io.Writer, p Pass) error {
	_, err := w.Write(Append(nil, p))
	return err
}

// Append is Write into a byte slice.
func Append(b []byte, p Pass) []byte {
	gpus := make([]gpuSeries, 0, len(p.Sample.GPUs))
	for i := range p.Sample.GPUs {
		gpus = append(gpus, newGPUSeries(&p.Sample.GPUs[i], p))
	}
	for _, f := range fields {
		header := false
		line := func(labels string, v number) {
			if !header {
				b = appendHeader(b, f)
				header = true
			}
			b = append(b, f.name...)
			b = append(b, '{')
			b = append(b, labels...)
			b = append(b, "} "...)
			b = appendNumber(b, v)
			b = append(b, '\n')
		}
		for _, g := range gpus {
			switch {
			case f.name == fieldXIDErrors:
				if xid, ok := p.XIDs[g.sample.UUID]; ok {
					line(g.labels+xidLabels(xid)+g.holder, number{u: xid})
				}
			case g.sample.Lost:
				// DCGM blanks a lost GPU's fields: its series go.
			default:
				if v, ok := f.value(g.sample); ok {
					line(g.labels+g.holder, v)
				}
				if f.name == fieldFBUsed {
					for _, m := range g.instances {
						if m.sample.MemoryUsedMiB != nil {
							line(m.labels+m.holder, number{u: *m.sample.MemoryUsedMiB})
						}
					}
				}
			}
		}
	}
	return b
}

// gpuSeries is one GPU's sample with its label text, built once per pass.
type gpuSeries struct {
	sample *nvml.GPUSample
	// labels runs from gpu to DCGM_FI_DRIVER_VERSION; holder is the
	// container, namespace and pod labels, "" when no container holds it.
	labels, holder string
	instances      []instanceSeries
}

type instanceSeries struct {
	sample         *nvml.MIGSample
	labels, holder string
}

func newGPUSeries(g *nvml.GPUSample, p Pass) gpuSeries {
	s := gpuSeries{sample: g, labels: deviceLabels(g, p, nil), holder: holderLabels(p.Holders, g.UUID)}
	seen := map[int]bool{}
	for i := range g.MIG {
		m := &g.MIG[i]
		// One series per GPU instance: its compute instances share its
		// memory, and DCGM's GPU_I entity is the GPU instance.
		if seen[m.GPUInstanceID] {
			continue
		}
		seen[m.GPUInstanceID] = true
		s.instances = append(s.instances, instanceSeries{sample: m, labels: deviceLabels(g, p, m), holder: holderLabels(p.Holders, m.UUID)})
	}
	return s
}

// deviceLabels spells the labels dcgm-exporter puts on every GPU series, in
// its order, for the GPU or, with m, one of its GPU instances.
func deviceLabels(g *nvml.GPUSample, p Pass, m *nvml.MIGSample) string {
	var b strings.Builder
	index := strconv.Itoa(g.Index)
	label(&b, "gpu", index)
	label(&b, "UUID", g.UUID)
	label(&b, "pci_bus_id", nvmlBusID(g.PCIBusID))
	label(&b, "device", "nvidia"+index)
	label(&b, "modelName", g.Name)
	if m != nil {
		label(&b, "GPU_I_PROFILE", gpuInstanceProfile(m.Profile))
		label(&b, "GPU_I_ID", strconv.Itoa(m.GPUInstanceID))
	}
	if p.Hostname != "" {
		for _, name := range p.HostnameLabel.names() {
			label(&b, name, p.Hostname)
		}
	}
	if p.Sample.Driver.Version != "" {
		label(&b, "DCGM_FI_DRIVER_VERSION", p.Sample.Driver.Version)
	}
	return b.String()
}

// holderLabels are the labels of the container holding a device, in
// dcgm-exporter's (sorted) order, after a comma; "" when none holds it.
func holderLabels(holders map[string]podresources.Container, uuid string) string {
	c, ok := holders[uuid]
	if !ok || uuid == "" {
		return ""
	}
	var b strings.Builder
	label(&b, "container", c.Name)
	label(&b, "namespace", c.Namespace)
	label(&b, "pod", c.Pod)
	return "," + b.String()
}

// xidLabels are DCGM_FI_DEV_XID_ERRORS' err_code and err_msg, after a comma.
func xidLabels(xid uint64) string {
	msg, ok := telemetry.XIDMeaning(xid)
	if !ok {
		msg = "Unknown Error" // dcgm-exporter's words for an XID it has no text for
	}
	var b strings.Builder
	label(&b, "err_code", strconv.FormatUint(xid, 10))
	label(&b, "err_msg", msg)
	return "," + b.String()
}

// label appends `,name="value"` (no comma first) with the value escaped as
// the exposition format wants: backslash, double quote and line feed.
func label(b *strings.Builder, name, value string) {
	if b.Len() > 0 {
		b.WriteByte(',')
	}
	b.WriteString(name)
	b.WriteString(`="`)
	b.WriteString(escape(value, true))
	b.WriteByte('"')
}

// escape escapes a label value (quote true) or a HELP text, and replaces
// invalid UTF-8, which the format does not allow.
func escape(s string, quote bool) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func appendHeader(b []byte, f field) []byte {
	b = append(b, "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, escape(f.help, false)...)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.typ...)
	return append(b, '\n')
}

func appendNumber(b []byte, v number) []byte {
	if !v.isFloat {
		return strconv.AppendUint(b, v.u, 10)
	}
	switch {
	case math.IsNaN(v.f):
		return append(b, "NaN"...)
	case math.IsInf(v.f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v.f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v.f, 'f', -1, 64)
}

// nvmlBusID spells a sysfs PCI address ("0000:07:00.0") as NVML and DCGM
// do, the pci_bus_id dcgm-exporter shows: an eight-digit domain, upper
// case ("00000000:07:00.0").
func nvmlBusID(sysfs string) string {
	domain, rest, ok := strings.Cut(sysfs, ":")
	if !ok || len(domain) > 8 {
		return strings.ToUpper(sysfs)
	}
	return strings.Repeat("0", 8-len(domain)) + strings.ToUpper(domain+":"+rest)
}

// gpuInstanceProfile is the GPU instance's profile ("3g.20gb") of a MIG
// device's profile, which names the compute instance first when it uses
// fewer slices than its GPU instance ("1c.3g.20gb").
func gpuInstanceProfile(profile string) string {
	if before, after, ok := strings.Cut(profile, "c."); ok && before != "" && strings.Trim(before, "0123456789") == "" {
		return after
	}
	return profile
}

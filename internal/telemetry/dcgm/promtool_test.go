package dcgm

import (
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/dcgm/dcgmtest"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// TestPromtoolAcceptsTheExposition checks every kind of series, escaped
// label values included, with Prometheus' own parser and linter.
func TestPromtoolAcceptsTheExposition(t *testing.T) {
	p := everythingPass()
	odd := fullGPU(2)
	odd.Name = "Odd \"GPU\" C:\\dev\nline two \xff"
	p.Sample.GPUs = append(p.Sample.GPUs, odd)
	p.Hostname = `host"name\`
	p.Holders[odd.UUID] = podresources.Container{Namespace: "ns", Pod: "pod\n1", Name: `c"1"`}
	p.Sample.GPUs = append(p.Sample.GPUs, nvml.GPUSample{Index: 3, UUID: "GPU-3", Lost: true})
	dcgmtest.Promtool(t, Append(nil, p))
}

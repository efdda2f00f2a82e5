package dcgm

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// dcgmExporterCounters reads testdata/dcgm-exporter-counters.txt, the names
// and types of dcgm-exporter's default counters.
func dcgmExporterCounters(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/dcgm-exporter-counters.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counters := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, typ, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("testdata/dcgm-exporter-counters.txt: %q is not `name type`", line)
		}
		counters[name] = typ
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(counters) < 30 {
		t.Fatalf("testdata/dcgm-exporter-counters.txt lists %d counters; dcgm-exporter's defaults have 38", len(counters))
	}
	return counters
}

// everythingPass is a pass with every reading, an XID, MIG instances and
// pod labels: every series the package can write.
func everythingPass() Pass {
	mig := fullGPU(1)
	mig.MIG = []nvml.MIGSample{
		{MIGDevice: nvml.MIGDevice{Profile: "3g.20gb", GPUInstanceID: 1, UUID: "MIG-a"}, MemoryUsedMiB: ptr[uint64](1200)},
		{MIGDevice: nvml.MIGDevice{Profile: "3g.20gb", GPUInstanceID: 2, UUID: "MIG-b"}, MemoryUsedMiB: ptr[uint64](0)},
	}
	gpu := fullGPU(0)
	return Pass{
		Sample:   sampleOf(gpu, mig),
		Hostname: "node-1",
		XIDs:     map[string]uint64{gpu.UUID: 48, mig.UUID: 79},
		Holders: map[string]podresources.Container{
			gpu.UUID: {Namespace: "ml", Pod: "trainer-0", Name: "trainer"},
			"MIG-a":  {Namespace: "ml", Pod: "notebook", Name: "jupyter"},
		},
	}
}

func TestEmittedNamesAreDCGMExporterCountersWithTheirTypes(t *testing.T) {
	counters := dcgmExporterCounters(t)
	out := render(everythingPass())
	typed := map[string]string{}
	series := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			fields := strings.Fields(line)
			if len(fields) != 4 {
				t.Fatalf("malformed TYPE line %q", line)
			}
			typed[fields[2]] = fields[3]
		case strings.HasPrefix(line, "# HELP "):
		default:
			name, _, _ := strings.Cut(line, "{")
			if _, ok := typed[name]; !ok {
				t.Errorf("series before its TYPE line: %q", line)
			}
			key := line[:strings.LastIndexByte(line, ' ')]
			if series[key] {
				t.Errorf("series written twice: %s", key)
			}
			series[key] = true
		}
	}
	for name, typ := range typed {
		want, ok := counters[name]
		switch {
		case !ok:
			t.Errorf("%s is not one of dcgm-exporter's default counters", name)
		case typ != want:
			t.Errorf("%s is a %s, dcgm-exporter's counters make it a %s", name, typ, want)
		}
	}
	if len(typed) != len(fields) {
		t.Errorf("the pass with every reading wrote %d fields, the table has %d", len(typed), len(fields))
	}
}

// TestEveryDCGMExporterCounterIsFilledOrExplained keeps the table and the
// list of what it cannot fill in step with dcgm-exporter's counters.
func TestEveryDCGMExporterCounterIsFilledOrExplained(t *testing.T) {
	counters := dcgmExporterCounters(t)
	filled := map[string]bool{}
	for _, f := range fields {
		filled[f.name] = true
		if counters[f.name] != string(f.typ) {
			t.Errorf("fields: %s is a %s, dcgm-exporter's counters make it a %q", f.name, f.typ, counters[f.name])
		}
	}
	for name := range counters {
		_, explained := unfilled[name]
		switch {
		case filled[name] && explained:
			t.Errorf("%s is both filled and listed as unfilled", name)
		case !filled[name] && !explained:
			t.Errorf("%s is neither filled nor listed in unfilled with a reason", name)
		}
	}
	for name := range unfilled {
		if _, ok := counters[name]; !ok {
			t.Errorf("unfilled lists %s, which is not one of dcgm-exporter's counters", name)
		}
	}
}

package dcgm

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// counterLists are testdata's lists of dcgm-exporter's default counters
// (etc/default-counters.csv, commented lines included): release
// 3.3.6-3.4.2's and 4.5.3-4.8.2's, the newest last. Dashboards written for
// either find the names this package emits; the newest has them all.
var counterLists = []string{"testdata/dcgm-exporter-counters.txt", "testdata/dcgm-exporter-counters-4.8.txt"}

// dcgmExporterCounters reads one of counterLists: names and types.
func dcgmExporterCounters(t *testing.T, list string) map[string]string {
	t.Helper()
	f, err := os.Open(list)
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
			t.Fatalf("%s: %q is not `name type`", list, line)
		}
		if _, twice := counters[name]; twice {
			t.Fatalf("%s: %s listed twice", list, name)
		}
		counters[name] = typ
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(counters) < 30 {
		t.Fatalf("%s lists %d counters; dcgm-exporter's defaults have more than 30", list, len(counters))
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

// TestEmittedNamesAreDCGMExporterCountersWithTheirTypes: every name emitted
// is in the newest list, and has its type there and in an older list that
// has it. An older list may lack a name dcgm-exporter added since
// (DCGM_FI_DEV_FB_RESERVED, 4.3.1-4.4.0).
func TestEmittedNamesAreDCGMExporterCountersWithTheirTypes(t *testing.T) {
	for i, list := range counterLists {
		newest := i == len(counterLists)-1
		t.Run(list, func(t *testing.T) { emittedNamesAreIn(t, dcgmExporterCounters(t, list), newest) })
	}
}

// emittedNamesAreIn checks the names and types everythingPass writes
// against counters; a name counters lacks is an error only when all must
// be there.
func emittedNamesAreIn(t *testing.T, counters map[string]string, all bool) {
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
			if all {
				t.Errorf("%s is not one of dcgm-exporter's default counters", name)
			}
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
	counters := map[string]string{}
	for _, list := range counterLists {
		for name, typ := range dcgmExporterCounters(t, list) {
			if had, ok := counters[name]; ok && had != typ {
				t.Errorf("%s: %s is a %s, an older list makes it a %s", list, name, typ, had)
			}
			counters[name] = typ
		}
	}
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

package telemetry

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// nvidiaSMIHeader is the header nvidia-smi prints for
// --query-gpu=timestamp,index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.total,memory.used,memory.free,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,clocks.gr,clocks_throttle_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total --format=csv
const nvidiaSMIHeader = "timestamp, index, uuid, name, pci.bus_id, utilization.gpu [%], utilization.memory [%], memory.total [MiB], memory.used [MiB], memory.free [MiB], temperature.gpu, temperature.memory, power.draw [W], power.limit [W], clocks.current.sm [MHz], clocks.current.memory [MHz], clocks.current.graphics [MHz], clocks_event_reasons.active, ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total"

// parseCSV reads nvidia-smi CSV as scripts do: encoding/csv, the space
// after each comma trimmed.
func parseCSV(t *testing.T, text string) []map[string]string {
	t.Helper()
	r := csv.NewReader(strings.NewReader(text))
	r.TrimLeadingSpace = true
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, text)
	}
	var rows []map[string]string
	for _, record := range records[1:] {
		row := map[string]string{}
		for i, name := range records[0] {
			row[name] = record[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func TestCSVHeaderIsNvidiaSMIs(t *testing.T) {
	for _, c := range []CSV{{}, {NoUnits: true}} {
		if got := c.Header(); got != nvidiaSMIHeader+"\n" {
			t.Errorf("%+v header:\n got %q\nwant %q", c, got, nvidiaSMIHeader)
		}
	}
	if got := (CSV{NoHeader: true}).Header(); got != "" {
		t.Errorf("noheader printed %q", got)
	}
}

func TestCSVValues(t *testing.T) {
	busy := withReasons(a100(0), powerCap)
	busy.ECC.CorrectedVolatile = ptr[uint64](3)
	bare := nvml.GPUSample{Index: 1, UUID: "GPU-1", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "0000:0f:00.0"}
	s := sample(0, busy, bare)

	rows := parseCSV(t, CSV{}.Header()+CSV{}.Rows(s))
	want := map[string]string{
		"timestamp":                             "2026/11/26 08:00:00.123",
		"index":                                 "0",
		"uuid":                                  "GPU-00000000-0000-4000-8000-000000000000",
		"name":                                  "NVIDIA A100-SXM4-80GB",
		"pci.bus_id":                            "00000000:07:00.0",
		"utilization.gpu [%]":                   "45 %",
		"utilization.memory [%]":                "12 %",
		"memory.total [MiB]":                    "81920 MiB",
		"memory.used [MiB]":                     "10240 MiB",
		"memory.free [MiB]":                     "71680 MiB",
		"temperature.gpu":                       "40",
		"temperature.memory":                    "[N/A]",
		"power.draw [W]":                        "61.23 W",
		"power.limit [W]":                       "400.00 W",
		"clocks.current.sm [MHz]":               "1410 MHz",
		"clocks.current.memory [MHz]":           "1593 MHz",
		"clocks.current.graphics [MHz]":         "1410 MHz",
		"clocks_event_reasons.active":           "0x0000000000000004",
		"ecc.errors.corrected.volatile.total":   "3",
		"ecc.errors.uncorrected.volatile.total": "0",
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per GPU", len(rows))
	}
	for name, value := range want {
		if rows[0][name] != value {
			t.Errorf("%s = %q, want %q", name, rows[0][name], value)
		}
	}
	for name, value := range rows[1] {
		switch name {
		case "timestamp", "index", "uuid", "name", "pci.bus_id":
		default:
			if value != "[N/A]" {
				t.Errorf("GPU without readings: %s = %q, want [N/A]", name, value)
			}
		}
	}
	if rows[1]["pci.bus_id"] != "00000000:0F:00.0" {
		t.Errorf("pci.bus_id = %q, want NVML's upper-case spelling", rows[1]["pci.bus_id"])
	}

	nounits := parseCSV(t, CSV{NoUnits: true}.Header()+CSV{NoUnits: true}.Rows(s))
	for name, value := range map[string]string{"utilization.gpu [%]": "45", "power.draw [W]": "61.23", "memory.used [MiB]": "10240", "clocks.current.sm [MHz]": "1410", "temperature.memory": "[N/A]"} {
		if nounits[0][name] != value {
			t.Errorf("nounits: %s = %q, want %q", name, nounits[0][name], value)
		}
	}

	line := strings.SplitN(CSV{}.Rows(s), "\n", 2)[0]
	if !strings.HasPrefix(line, "2026/11/26 08:00:00.123, 0, GPU-") || strings.Contains(line, ",,") {
		t.Errorf("fields are not separated by \", \" as nvidia-smi separates them: %q", line)
	}
}

func TestParseCSVFormat(t *testing.T) {
	tests := []struct {
		format string
		want   CSV
		ok     bool
	}{
		{"csv", CSV{}, true},
		{"csv,noheader", CSV{NoHeader: true}, true},
		{"csv,nounits", CSV{NoUnits: true}, true},
		{"csv,nounits,noheader", CSV{NoHeader: true, NoUnits: true}, true},
		{"csv,noheader,nounits", CSV{NoHeader: true, NoUnits: true}, true},
		{"csv,bogus", CSV{}, false},
		{"table", CSV{}, false},
		{"csvx", CSV{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseCSVFormat(tt.format)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseCSVFormat(%q) = %+v, %v; want %+v, %v", tt.format, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNVMLBusID(t *testing.T) {
	for in, want := range map[string]string{"0000:07:00.0": "00000000:07:00.0", "0000:bd:00.0": "00000000:BD:00.0", "00000001:0a:00.0": "00000001:0A:00.0"} {
		if got := NVMLBusID(in); got != want {
			t.Errorf("NVMLBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

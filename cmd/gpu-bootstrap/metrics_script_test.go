package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

func TestMetricsFollowsScriptedGPUsAndXIDs(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Script(2,
		nvmltest.Step{TemperatureC: 40, PowerDrawMW: 100000, UtilizationSamples: []uint32{10, 20}, SMClockMHz: 1100, MemoryClockMHz: 1215},
		nvmltest.Step{TemperatureC: 71, PowerDrawMW: 350000, UtilizationSamples: []uint32{90, 100}, SMClockMHz: 1410, MemoryClockMHz: 1215},
	)
	env, _, _, _ := testEnv(fleet, nil)
	// --max-age 0: every scrape reads NVML, so each sees the GPUs as they are.
	srv := startMetrics(t, env, "--max-age", "0", "--pod-resources-socket", "")
	value := func(body, name, gpu string) string {
		for _, line := range series(body, name) {
			if strings.Contains(line, `{gpu="`+gpu+`",`) {
				return line[strings.LastIndexByte(line, ' ')+1:]
			}
		}
		return ""
	}

	_, before := httpGet(t, srv.url+"/metrics")
	fleet.Advance()
	_, after := httpGet(t, srv.url+"/metrics")
	for _, c := range []struct{ name, before, after string }{
		{"DCGM_FI_DEV_GPU_TEMP", "40", "71"},
		{"DCGM_FI_DEV_POWER_USAGE", "100", "350"},
		{"DCGM_FI_DEV_SM_CLOCK", "1100", "1410"},
	} {
		if got, gotAfter := value(before, c.name, "2"), value(after, c.name, "2"); got != c.before || gotAfter != c.after {
			t.Errorf("GPU 2 %s: %s then %s, want %s then %s", c.name, got, gotAfter, c.before, c.after)
		}
	}
	if value(after, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "2") == value(before, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "2") {
		t.Errorf("GPU 2's energy counter did not move over a step at 350 W:\n%s", series(after, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
	}
	if len(series(after, "DCGM_FI_DEV_XID_ERRORS")) != 0 {
		t.Fatalf("XID series before any XID:\n%s", series(after, "DCGM_FI_DEV_XID_ERRORS"))
	}

	// The event watch starts before the command says it serves.
	if n := fleet.FireXID(5, 48); n == 0 {
		t.Fatal("no NVML event set listens for XIDs")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := httpGet(t, srv.url+"/metrics")
		if xid := series(body, "DCGM_FI_DEV_XID_ERRORS"); len(xid) > 0 {
			if len(xid) != 1 || !strings.Contains(xid[0], `{gpu="5",`) || !strings.Contains(xid[0], `err_code="48"`) || !strings.HasSuffix(xid[0], "} 48") {
				t.Errorf("XID 48 on GPU 5 became:\n%s", strings.Join(xid, "\n"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("XID 48 on GPU 5 not in /metrics after 30 s:\n%s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

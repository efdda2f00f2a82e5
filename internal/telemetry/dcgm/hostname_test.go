package dcgm

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/dcgm/dcgmtest"
)

var hostLabelRE = regexp.MustCompile(`[,{]([Hh]ostname)="([^"]*)"`)

// hostLabels are the host labels of one series line, name=value, in the
// order written.
func hostLabels(line string) []string {
	var out []string
	for _, m := range hostLabelRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1]+"="+m[2])
	}
	return out
}

func TestHostnameLabelChoices(t *testing.T) {
	for _, tc := range []struct {
		label HostnameLabel
		want  []string
	}{
		{LowerHostname, []string{"hostname=node-1"}},
		{UpperHostname, []string{"Hostname=node-1"}},
		{BothHostnames, []string{"Hostname=node-1", "hostname=node-1"}},
	} {
		t.Run(tc.label.String(), func(t *testing.T) {
			p := everythingPass()
			p.HostnameLabel = tc.label
			out := Append(nil, p)
			lines := 0
			for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
				if strings.HasPrefix(line, "#") {
					continue
				}
				lines++
				got := hostLabels(line)
				if strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Errorf("--hostname-label %s: host labels %v, want %v, on %s", tc.label, got, tc.want, line)
				}
				// In dcgm-exporter's place: after the device (and MIG)
				// labels, before the driver version.
				if !strings.Contains(line, `="node-1",DCGM_FI_DRIVER_VERSION="550.54.15"`) {
					t.Errorf("host label not just before DCGM_FI_DRIVER_VERSION: %s", line)
				}
			}
			if lines < len(fields) {
				t.Fatalf("only %d series written:\n%s", lines, out)
			}
			dcgmtest.Promtool(t, out)
		})
	}
}

func TestHostnameLabelDefaultIsTheNewestDCGMExporters(t *testing.T) {
	var p Pass // the zero value, as an Options or Pass that says nothing
	if p.HostnameLabel != LowerHostname || p.HostnameLabel.String() != "hostname" {
		t.Errorf("zero HostnameLabel is %s, want hostname (dcgm-exporter 4.6.0-4.8.3 and later)", p.HostnameLabel)
	}
	q := everythingPass()
	out := render(q)
	if !strings.Contains(out, `,hostname="node-1",`) || strings.Contains(out, "Hostname=") {
		t.Errorf("default exposition does not carry hostname alone:\n%s", out)
	}
}

func TestNoHostnameNoHostLabelWhateverTheChoice(t *testing.T) {
	for _, h := range []HostnameLabel{LowerHostname, UpperHostname, BothHostnames} {
		p := everythingPass()
		p.Hostname, p.HostnameLabel = "", h
		if out := render(p); strings.Contains(strings.ToLower(out), "hostname=") {
			t.Errorf("%s with no host name: a host label was written:\n%s", h, out)
		}
	}
}

func TestParseHostnameLabel(t *testing.T) {
	for _, h := range []HostnameLabel{LowerHostname, UpperHostname, BothHostnames} {
		got, err := ParseHostnameLabel(h.String())
		if err != nil || got != h {
			t.Errorf("ParseHostnameLabel(%q) = %s, %v", h.String(), got, err)
		}
		var v HostnameLabel
		text, _ := h.MarshalText()
		if err := v.UnmarshalText(text); err != nil || v != h {
			t.Errorf("text round trip of %s: %s, %v", h, v, err)
		}
	}
	for _, bad := range []string{"", "HOSTNAME", "host", "Both", "none"} {
		_, err := ParseHostnameLabel(bad)
		if err == nil {
			t.Errorf("ParseHostnameLabel(%q) accepted", bad)
			continue
		}
		for _, want := range []string{"hostname", "Hostname", "both"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseHostnameLabel(%q): %q does not name the choice %s", bad, err, want)
			}
		}
	}
}

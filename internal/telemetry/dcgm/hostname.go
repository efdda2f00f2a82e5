package dcgm

import "fmt"

// HostnameLabel is the name, or names, the host's label goes under.
//
// dcgm-exporter wrote Hostname up to release 4.5.3-4.8.2 and writes hostname
// from 4.6.0-4.8.3 on (released 2026-07-15; its release notes: "Rename the
// Hostname label to hostname (#655)", NVIDIA/dcgm-exporter commit d5e5f51,
// internal/pkg/rendermetrics/render_metrics.go). It has no option that keeps
// the old name: its only hostname option, --no-hostname
// (DCGM_EXPORTER_NO_HOSTNAME, pkg/cmd/app.go), leaves the label out. So a
// dashboard or alert keyed on one spelling sees nothing from an exporter that
// writes the other; BothHostnames serves both while dashboards move.
type HostnameLabel uint8

const (
	// LowerHostname writes hostname, as dcgm-exporter 4.6.0-4.8.3 and later
	// do. The zero value: the newest dcgm-exporter release's name.
	LowerHostname HostnameLabel = iota
	// UpperHostname writes Hostname, as dcgm-exporter 3.x up to 4.5.3-4.8.2
	// did.
	UpperHostname
	// BothHostnames writes Hostname and then hostname, with the same value.
	// chosen: that order, Prometheus' sorted order; label order carries no
	// meaning to Prometheus.
	BothHostnames
)

// String is the flag spelling: "hostname", "Hostname" or "both".
func (h HostnameLabel) String() string {
	switch h {
	case LowerHostname:
		return "hostname"
	case UpperHostname:
		return "Hostname"
	case BothHostnames:
		return "both"
	}
	return fmt.Sprintf("HostnameLabel(%d)", uint8(h))
}

// ParseHostnameLabel reads the flag spelling, case-sensitively: the case is
// the whole point.
func ParseHostnameLabel(s string) (HostnameLabel, error) {
	for _, h := range []HostnameLabel{LowerHostname, UpperHostname, BothHostnames} {
		if s == h.String() {
			return h, nil
		}
	}
	return 0, fmt.Errorf("%q: hostname (dcgm-exporter 4.6.0-4.8.3 and later, the default), Hostname (dcgm-exporter 3.x to 4.5.3-4.8.2) or both", s)
}

// MarshalText is String, for flag.TextVar.
func (h HostnameLabel) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText is ParseHostnameLabel, for flag.TextVar.
func (h *HostnameLabel) UnmarshalText(b []byte) error {
	v, err := ParseHostnameLabel(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// names are the label names h writes, in order.
func (h HostnameLabel) names() []string {
	switch h {
	case UpperHostname:
		return []string{"Hostname"}
	case BothHostnames:
		return []string{"Hostname", "hostname"}
	}
	return []string{"hostname"}
}

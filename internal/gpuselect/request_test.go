package gpuselect

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseMemory(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantMiB uint64
		wantErr string
	}{
		{in: "20GiB", wantMiB: 20480},
		{in: "20 GiB", wantMiB: 20480},
		{in: "20gib", wantMiB: 20480},
		{in: "20Gi", wantMiB: 20480},
		{in: "1.5GiB", wantMiB: 1536},
		{in: "512MiB", wantMiB: 512},
		{in: "1TiB", wantMiB: 1 << 20},
		{in: "40GB", wantMiB: 38147}, // 40e9 B = 38146.97 MiB, rounded up
		{in: "1MB", wantMiB: 1},      // 0.95 MiB, rounded up
		{in: "1KiB", wantMiB: 1},
		{in: "0", wantMiB: 0},
		{in: "0GiB", wantMiB: 0},
		{in: "", wantErr: "empty amount"},
		{in: "20", wantErr: "has no unit"},
		{in: "20G", wantErr: "not an amount of memory"},
		{in: "-1GiB", wantErr: "not an amount of memory"},
		{in: "GiB", wantErr: "not an amount of memory"},
		{in: "NaNGiB", wantErr: "not an amount of memory"},
		{in: "1e300TiB", wantErr: "more memory than any GPU has"},
		{in: "twentyGiB", wantErr: "not an amount of memory"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMemory(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseMemory(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.wantMiB {
				t.Fatalf("ParseMemory(%q) = %d, %v; want %d", tc.in, got, err, tc.wantMiB)
			}
		})
	}
}

func TestRequestValidateNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Count: 0, Prefer: PreferIdle}, "--count 0"},
		{Request{Count: 1, Prefer: "spread"}, `--prefer "spread"`},
		{Request{Count: 1, Prefer: PreferIdle, BusyUtilization: 101}, "--busy-utilization 101"},
	} {
		err := tc.req.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v; want it to name %q", tc.req, err, tc.want)
		}
	}
	if err := (Request{Count: 2, Prefer: PreferPacked, BusyUtilization: 10}).Validate(); err != nil {
		t.Errorf("a valid request was refused: %v", err)
	}
}

func TestEveryListedPreferenceIsAcceptedAndNamedInTheRefusal(t *testing.T) {
	err := Request{Count: 1, Prefer: "spread"}.Validate()
	for _, p := range Preferences {
		if err := (Request{Count: 1, Prefer: p.Name}).Validate(); err != nil {
			t.Errorf("preference %q is listed but refused: %v", p.Name, err)
		}
		if p.Description == "" {
			t.Errorf("preference %q has no description for the flag help", p.Name)
		}
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(string(p.Name))) {
			t.Errorf("the refusal %v does not name %q", err, p.Name)
		}
	}
}

func TestOrList(t *testing.T) {
	for _, tc := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a or b"},
		{[]string{"a", "b", "c"}, "a, b or c"},
	} {
		if got := OrList(tc.items); got != tc.want {
			t.Errorf("OrList(%q) = %q, want %q", tc.items, got, tc.want)
		}
	}
}

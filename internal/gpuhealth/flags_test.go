package gpuhealth

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestArgsOfTheDefaults(t *testing.T) {
	want := []string{"health-agent", "--listen=:9400", "--interval=5s", "--damping=1m0s", "--taint=false",
		"--fatal=xid_critical,gpu_lost,ecc_uncorrectable,row_remap_failure,device_count", "--expected-gpus=0"}
	if got := DefaultSettings().Args(); !slices.Equal(got, want) {
		t.Errorf("Args() =\n  %q\nwant\n  %q", got, want)
	}
}

func TestParseArgsIsTheInverseOfArgs(t *testing.T) {
	tests := []struct {
		description string
		settings    Settings
	}{
		{"the defaults", DefaultSettings()},
		{"every setting changed", Settings{
			Listen: "0.0.0.0:9500", SampleInterval: 250 * time.Millisecond, Damping: 90 * time.Second, Taint: true,
			Fatal: []FaultClass{ClassGPULost, ClassNVLinkErrors, ClassPCIeReplays}, ExpectedGPUs: 8,
		}},
		{"no damping and no fatal class", Settings{Listen: ":9400", SampleInterval: time.Second}},
		{"every class fatal", Settings{Listen: "[::1]:9400", SampleInterval: time.Minute, Damping: time.Hour, Fatal: AllClasses()}},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, err := ParseArgs(tt.settings.Args())
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", tt.settings.Args(), err)
			}
			if !reflect.DeepEqual(got, tt.settings) {
				t.Errorf("ParseArgs(Args()) =\n  %+v\nwant\n  %+v", got, tt.settings)
			}
		})
	}
}

func TestParseArgsTakesDefaultsForMissingFlags(t *testing.T) {
	got, err := ParseArgs([]string{CommandName, "--taint"})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.Taint = true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseArgs(health-agent --taint) = %+v, want %+v", got, want)
	}
	// Spaces after commas are forgiven.
	got, err = ParseArgs([]string{CommandName, "--fatal=gpu_lost, device_count"})
	if err != nil || !slices.Equal(got.Fatal, []FaultClass{ClassGPULost, ClassDeviceCount}) {
		t.Errorf("--fatal with spaces: %v, %v", got.Fatal, err)
	}
}

func TestParseArgsRefuses(t *testing.T) {
	tests := []struct {
		description string
		args        []string
		wantErr     string
	}{
		{"no command", nil, `starts with "health-agent"`},
		{"another command", []string{"metrics", "--listen=:9400"}, `starts with "health-agent"`},
		{"an unknown flag", []string{CommandName, "--repair"}, "repair"},
		{"an unknown fatal class", []string{CommandName, "--fatal=gpu_lost,xid79"}, "valid classes are"},
		{"a bad duration", []string{CommandName, "--interval=soon"}, "interval"},
		{"an argument", []string{CommandName, "node-1"}, `remove "node-1"`},
		{"an invalid setting", []string{CommandName, "--interval=0s"}, "--interval=0s"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			_, err := ParseArgs(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseArgs(%q) = %v, want an error mentioning %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

func TestRegisterFlagsSetsTheDefaults(t *testing.T) {
	var s Settings
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	s.RegisterFlags(fs)
	if !reflect.DeepEqual(s, DefaultSettings()) {
		t.Errorf("after RegisterFlags the settings are %+v, want the defaults", s)
	}
	for _, name := range []string{"listen", "interval", "damping", "taint", "fatal", "expected-gpus"} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s is not registered", name)
			continue
		}
		if f.Usage == "" {
			t.Errorf("flag --%s has no usage", name)
		}
	}
	if got := fs.Lookup("fatal").DefValue; got != "xid_critical,gpu_lost,ecc_uncorrectable,row_remap_failure,device_count" {
		t.Errorf("--fatal's default shows as %q", got)
	}
}

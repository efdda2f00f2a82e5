package main

import (
	"flag"
	"strings"
	"testing"
)

// TestToolkitFlags: --toolkit-version pins and implies --install-toolkit;
// the flags override the config file; a bad version is an error that names
// toolkit.version before anything runs.
func TestToolkitFlags(t *testing.T) {
	tests := []struct {
		description string
		file        string // config file content; "" = none
		args        []string
		install     bool
		version     string
		err         string
	}{
		{description: "--install-toolkit alone takes the newest release", args: []string{"--install-toolkit"}, install: true},
		{description: "--toolkit-version pins and installs", args: []string{"--toolkit-version", "1.17.8"}, install: true, version: "1.17.8"},
		{description: "--toolkit-version overrides the file's pin", file: "toolkit:\n  install: true\n  version: 1.16.2\n", args: []string{"--toolkit-version", "1.17.8"}, install: true, version: "1.17.8"},
		{description: "a bad version names toolkit.version", args: []string{"--toolkit-version", "v1.17.8"}, err: "toolkit.version"},
		{description: "--install-toolkit=false with a pin is contradictory", args: []string{"--toolkit-version", "1.17.8", "--install-toolkit=false"}, err: "toolkit.install"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			var d desiredFlags
			fs := flag.NewFlagSet("plan", flag.ContinueOnError)
			d.register(fs)
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeConfig(t, tc.file)}, args...)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if !d.anyStateFlag() {
				t.Error("the toolkit flags do not count as desired state")
			}
			cfg, err := d.config()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to name %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Toolkit == nil || cfg.Toolkit.Install != tc.install || cfg.Toolkit.Version != tc.version {
				t.Errorf("toolkit = %+v, want install %v version %q", cfg.Toolkit, tc.install, tc.version)
			}
		})
	}
}

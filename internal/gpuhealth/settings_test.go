package gpuhealth

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultSettings(t *testing.T) {
	s := DefaultSettings()
	if s.Listen != ":9400" || s.SampleInterval != 5*time.Second || s.Damping != time.Minute || s.Taint || s.ExpectedGPUs != 0 {
		t.Errorf("DefaultSettings() = %+v", s)
	}
	if strings.Join(classStrings(s.Fatal), ",") != strings.Join(classStrings(DefaultFatal()), ",") {
		t.Errorf("default fatal classes %v, want %v", s.Fatal, DefaultFatal())
	}
	if err := s.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestSettingsValidate(t *testing.T) {
	tests := []struct {
		description string
		change      func(*Settings)
		wantErr     []string // each must be in the error; none: valid
	}{
		{"no damping is valid", func(s *Settings) { s.Damping = 0 }, nil},
		{"no fatal class is valid", func(s *Settings) { s.Fatal = nil }, nil},
		{"no listen address is valid", func(s *Settings) { s.Listen = "" }, nil},
		{"a zero interval", func(s *Settings) { s.SampleInterval = 0 }, []string{"--interval=0s", "more than 0"}},
		{"a negative interval", func(s *Settings) { s.SampleInterval = -time.Second }, []string{"--interval=-1s", "more than 0"}},
		{"a negative damping", func(s *Settings) { s.Damping = -time.Second }, []string{"--damping=-1s", "give 0"}},
		{"an unknown fatal class", func(s *Settings) { s.Fatal = []FaultClass{"xid79"} }, []string{"--fatal", `"xid79"`, "gpu_lost"}},
		{"a fatal class twice", func(s *Settings) { s.Fatal = []FaultClass{ClassGPULost, ClassGPULost} }, []string{"--fatal", "gpu_lost is listed twice"}},
		{"negative expected GPUs", func(s *Settings) { s.ExpectedGPUs = -1 }, []string{"--expected-gpus=-1", "nvidia.com/gpu.count"}},
		{"a listen address without a port", func(s *Settings) { s.Listen = "9400" }, []string{"--listen=9400", ":9400"}},
		{
			"every error at once",
			func(s *Settings) { s.SampleInterval, s.Damping, s.ExpectedGPUs = 0, -1, -1 },
			[]string{"--interval", "--damping", "--expected-gpus"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			s := DefaultSettings()
			tt.change(&s)
			err := s.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() accepted %+v", s)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

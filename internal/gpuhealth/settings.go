package gpuhealth

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Settings are the health agent's settings, one flag each.
type Settings struct {
	// Listen is the address of /metrics and /healthz (--listen).
	Listen string
	// SampleInterval is how often the agent samples NVML (--interval).
	SampleInterval time.Duration
	// Damping is the shortest time between two changes of the published
	// condition (--damping; see Damper).
	Damping time.Duration
	// Taint: taint the node NoSchedule while a fatal fault stands (--taint).
	Taint bool
	// Fatal lists the fault classes that turn the condition False (--fatal).
	Fatal []FaultClass
	// ExpectedGPUs is how many GPUs the node should have; 0 takes the node
	// label nvidia.com/gpu.count (--expected-gpus).
	ExpectedGPUs int
}

// DefaultSettings are the agent's defaults.
func DefaultSettings() Settings {
	return Settings{
		Listen:         ":9400",
		SampleInterval: 5 * time.Second,
		Damping:        time.Minute,
		Taint:          false,
		Fatal:          DefaultFatal(),
		ExpectedGPUs:   0,
	}
}

// Validate checks every setting; each error names the flag and the fix.
func (s Settings) Validate() error {
	var errs []error
	if s.Listen != "" {
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			errs = append(errs, fmt.Errorf("--listen=%s: not a host:port address (%v); give one such as :9400", s.Listen, err))
		}
	}
	if s.SampleInterval <= 0 {
		errs = append(errs, fmt.Errorf("--interval=%s: the sample interval must be more than 0, such as 5s", s.SampleInterval))
	}
	if s.Damping < 0 {
		errs = append(errs, fmt.Errorf("--damping=%s: the damping interval cannot be negative; give 0 to publish every change at once", s.Damping))
	}
	seen := map[FaultClass]bool{}
	for _, c := range s.Fatal {
		if _, err := ParseFaultClass(string(c)); err != nil {
			errs = append(errs, fmt.Errorf("--fatal: %w", err))
			continue
		}
		if seen[c] {
			errs = append(errs, fmt.Errorf("--fatal: %s is listed twice; list each class once", c))
		}
		seen[c] = true
	}
	if s.ExpectedGPUs < 0 {
		errs = append(errs, fmt.Errorf("--expected-gpus=%d: cannot be negative; give 0 to take the node label nvidia.com/gpu.count", s.ExpectedGPUs))
	}
	return errors.Join(errs...)
}

package bootstrap

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Config is the desired state of a GPU node, read from YAML (see
// examples/bootstrap) and/or flags. A section left out is a step not run.
type Config struct {
	Driver      *DriverConfig      `json:"driver,omitempty"`
	Toolkit     *ToolkitConfig     `json:"toolkit,omitempty"`
	Persistence *bool              `json:"persistence,omitempty"`
	Runtime     *RuntimeConfig     `json:"runtime,omitempty"`
	CDI         *CDIConfig         `json:"cdi,omitempty"`
	GPU         *GPUSettingsConfig `json:"gpu,omitempty"`
	Verify      VerifyConfig       `json:"verify,omitempty"`
}

// LoadConfig reads a YAML config file. Unknown keys are errors, so a typo
// never silently turns a step off.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig parses YAML config data; name is used in errors.
func ParseConfig(name string, data []byte) (*Config, error) {
	var cfg Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &cfg, nil
}

// FieldError is one invalid setting: the key path in the config file (and
// the flag that sets it, if any) and how to fix it.
type FieldError struct {
	Field   string // "runtime.engine"
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate checks the whole config before anything touches the host and
// returns every problem at once (errors.Join of *FieldError).
func (c *Config) Validate() error {
	var errs []error
	if c.Driver != nil {
		errs = append(errs, c.Driver.validate("driver")...)
	}
	if c.Toolkit != nil {
		errs = append(errs, c.Toolkit.validate("toolkit")...)
	}
	if c.Runtime != nil {
		errs = append(errs, c.Runtime.validate("runtime")...)
	}
	if c.CDI != nil {
		errs = append(errs, c.CDI.validate("cdi")...)
	}
	if c.GPU != nil {
		errs = append(errs, c.GPU.validate("gpu")...)
	}
	errs = append(errs, c.Verify.validate("verify")...)
	errs = append(errs, c.validatePaths()...)
	return errors.Join(errs...)
}

// Steps are the steps the config asks for, in the order they apply: the
// driver first (the others need it), then persistence, the container runtime,
// the CDI spec and the GPU settings.
func (c *Config) Steps() []Step {
	var steps []Step
	if c.Driver != nil {
		steps = append(steps, newDriverStep(*c.Driver))
	}
	if c.Toolkit != nil && c.Toolkit.Install {
		steps = append(steps, newToolkitStep(*c.Toolkit))
	}
	if c.Persistence != nil && *c.Persistence {
		steps = append(steps, newPersistenceStep())
	}
	if c.Runtime != nil {
		steps = append(steps, newRuntimeStep(*c.Runtime, c.CDI))
	}
	if c.CDI != nil && c.CDI.Enabled {
		steps = append(steps, newCDIStep(*c.CDI))
	}
	if c.GPU != nil {
		steps = append(steps, newGPUSettingsStep(*c.GPU))
	}
	return steps
}

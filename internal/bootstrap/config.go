package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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

	// origins is where each key path's value came from (file position or
	// flag), so that Validate's errors can say; see config_decode.go.
	origins map[string]origin
}

// LoadConfig reads a YAML config file (see config_decode.go for what is
// accepted). Unknown keys are errors, so a typo never silently turns a step
// off, and so is a file that says nothing.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config %s: %w; give --config the path of a readable YAML file", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the config %s: %w", path, err)
	}
	if !info.Mode().IsRegular() && info.Mode()&os.ModeNamedPipe == 0 && info.Mode()&os.ModeCharDevice == 0 {
		what := "not a regular file"
		if info.IsDir() {
			what = "a directory"
		}
		return nil, &FieldError{File: path, Problem: fmt.Sprintf("is %s; give --config the desired-state YAML file itself, e.g. %s", what, strings.TrimSuffix(path, "/")+"/node.yaml")}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the config %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, &FieldError{File: path, Problem: fmt.Sprintf("is larger than %d KiB; a desired-state file is a few lines of YAML (see README): is this the right file?", maxConfigBytes>>10)}
	}
	return ParseConfig(path, data)
}

// ParseConfig parses YAML config data; name is used in errors, which are
// *FieldError values carrying the file, line and column (errors.Join when
// there are several).
func ParseConfig(name string, data []byte) (*Config, error) {
	return decodeConfig(name, data)
}

// FromFlag records that a flag set the value at field ("runtime.engine"), so
// that an error about it names the flag rather than a line of the file.
func (c *Config) FromFlag(field, flag string) {
	if c.origins == nil {
		c.origins = map[string]origin{}
	}
	c.origins[field] = origin{flag: flag}
}

// FieldError is one invalid setting: the key path in the config file (and
// the flag that sets it, if any) and how to fix it.
type FieldError struct {
	Field   string // "runtime.engine"; "" for the file as a whole
	Problem string

	// Where the value came from, when known: a position in the config file
	// (Line and Column 1-based, 0 when unknown) or the flag that set it.
	File         string
	Line, Column int
	Flag         string
}

// Error is "node.yaml:3:11: runtime.engine: problem", with what is known.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Flag != "" {
			b.WriteString(" (set by " + e.Flag + ")")
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// locate fills in where err's field came from, from the value's own origin
// or, for a key that is missing, its section's.
func (c *Config) locate(err error) {
	var ferr *FieldError
	if !errors.As(err, &ferr) || ferr.File != "" || ferr.Flag != "" {
		return
	}
	for field := ferr.Field; field != ""; field = parentField(field) {
		if o, ok := c.origins[field]; ok {
			ferr.File, ferr.Line, ferr.Column, ferr.Flag = o.file, o.line, o.column, o.flag
			return
		}
	}
}

// parentField is "gpu.mig" for "gpu.mig.profiles[1]" and "gpu.mig.profiles".
func parentField(field string) string {
	if i := strings.LastIndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return ""
}

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
	for _, err := range errs {
		c.locate(err)
	}
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

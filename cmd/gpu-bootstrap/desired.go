package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
)

// desiredFlags are the flags that say what the node should look like: a
// config file, and flags that override single keys of it.
type desiredFlags struct {
	configPath string
	root       string
	sysfs      string

	driverBranch   string
	kernelModules  string
	installToolkit optionalBool
	toolkitVersion string
	persistence    optionalBool
	runtimeEngine  string
	runtimeDefault optionalBool
	cdi            optionalBool
	expectGPUs     int
}

func (d *desiredFlags) register(fs *flag.FlagSet) {
	d.registerHost(fs)
	fs.StringVar(&d.configPath, "config", "", "desired state `file` (YAML; see examples/bootstrap); the flags below override its keys")
	fs.StringVar(&d.driverBranch, "driver-branch", "", "driver branch to install and pin: a number such as 580, or lts / production for NVIDIA's newest long-term support / production branch, resolved when the plan is made (driver.branch)")
	fs.StringVar(&d.kernelModules, "kernel-modules", "", "open or proprietary (driver.kernel_modules)")
	fs.Var(&d.installToolkit, "install-toolkit", "install the NVIDIA Container Toolkit (nvidia-container-runtime, nvidia-ctk) (toolkit.install)")
	fs.StringVar(&d.toolkitVersion, "toolkit-version", "", "NVIDIA Container Toolkit release to install and keep, e.g. 1.17.8; implies --install-toolkit (toolkit.version)")
	fs.Var(&d.persistence, "persistence", "persistence mode on every GPU and nvidia-persistenced enabled (persistence)")
	fs.StringVar(&d.runtimeEngine, "runtime", "", "containerd, docker or crio: add the nvidia runtime to it (runtime.engine)")
	fs.Var(&d.runtimeDefault, "runtime-default", "make nvidia the default runtime (runtime.set_as_default)")
	fs.Var(&d.cdi, "cdi", "write the CDI spec and enable CDI in the runtime (cdi.enabled, runtime.enable_cdi)")
	fs.IntVar(&d.expectGPUs, "expect-gpus", -1, "number of GPUs the node must have; 0 means at least one (verify.expect_gpus)")
}

// registerHost registers the flags that say where the host is.
func (d *desiredFlags) registerHost(fs *flag.FlagSet) {
	fs.StringVar(&d.root, "root", "/", "act on the file system under `dir` (an image being built, a chroot, a test)")
	fs.StringVar(&d.sysfs, "sysfs", "", "sysfs `dir` to scan for NVIDIA PCI devices (default <root>/sys)")
}

func (d *desiredFlags) anyStateFlag() bool {
	return d.configPath != "" || d.driverBranch != "" || d.kernelModules != "" || d.installToolkit.set || d.toolkitVersion != "" || d.persistence.set ||
		d.runtimeEngine != "" || d.runtimeDefault.set || d.cdi.set || d.expectGPUs >= 0
}

// config reads the config file, applies the flags over it and validates the
// result; nothing on the host has been touched when it returns an error.
func (d *desiredFlags) config() (*bootstrap.Config, error) {
	cfg := &bootstrap.Config{}
	if d.configPath != "" {
		loaded, err := bootstrap.LoadConfig(d.configPath)
		if err != nil {
			return nil, &configError{source: d.source(), err: err}
		}
		cfg = loaded
	}
	d.overlay(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, &configError{source: d.source(), err: err}
	}
	return cfg, nil
}

func (d *desiredFlags) overlay(cfg *bootstrap.Config) {
	if d.driverBranch != "" || d.kernelModules != "" {
		if cfg.Driver == nil {
			cfg.Driver = &bootstrap.DriverConfig{}
		}
		if d.driverBranch != "" {
			cfg.Driver.Branch = d.driverBranch
			cfg.FromFlag("driver.branch", "--driver-branch")
		}
		if d.kernelModules != "" {
			cfg.Driver.KernelModules = d.kernelModules
			cfg.FromFlag("driver.kernel_modules", "--kernel-modules")
		}
	}
	if d.installToolkit.set || d.toolkitVersion != "" {
		if cfg.Toolkit == nil {
			cfg.Toolkit = &bootstrap.ToolkitConfig{}
		}
		if d.toolkitVersion != "" {
			cfg.Toolkit.Version = d.toolkitVersion
			cfg.FromFlag("toolkit.version", "--toolkit-version")
			cfg.Toolkit.Install = true
		}
		if d.installToolkit.set {
			cfg.Toolkit.Install = d.installToolkit.value
		}
	}
	if d.persistence.set {
		cfg.Persistence = &d.persistence.value
	}
	if d.runtimeEngine != "" || d.runtimeDefault.set {
		if cfg.Runtime == nil {
			cfg.Runtime = &bootstrap.RuntimeConfig{}
		}
		if d.runtimeEngine != "" {
			cfg.Runtime.Engine = d.runtimeEngine
			cfg.FromFlag("runtime.engine", "--runtime")
		}
		if d.runtimeDefault.set {
			cfg.Runtime.SetAsDefault = d.runtimeDefault.value
		}
	}
	if d.cdi.set {
		if cfg.CDI == nil {
			cfg.CDI = &bootstrap.CDIConfig{}
		}
		cfg.CDI.Enabled = d.cdi.value
		if cfg.Runtime != nil {
			cfg.Runtime.EnableCDI = d.cdi.value
		}
	}
	if d.expectGPUs >= 0 {
		cfg.Verify.ExpectGPUs = d.expectGPUs
		cfg.FromFlag("verify.expect_gpus", "--expect-gpus")
	}
}

func (d *desiredFlags) source() string {
	if d.configPath != "" {
		return d.configPath
	}
	return "flags"
}

func (d *desiredFlags) sysfsRoot() string {
	if d.sysfs != "" {
		return d.sysfs
	}
	return filepath.Join(d.root, "sys")
}

// host is the bootstrap's view of the machine these flags point at.
func (d *desiredFlags) host(env environment) *bootstrap.Host {
	return &bootstrap.Host{
		Root:   d.root,
		GPUs:   env.openGPUs(d.sysfsRoot()),
		Runner: env.runner,
		Getenv: env.getenv,
		Now:    env.now,
	}
}

// configError is an invalid desired state: every problem, one per line.
type configError struct {
	source string
	err    error
}

func (e *configError) Error() string {
	msg := fmt.Sprintf("invalid desired state (%s); nothing was changed:", e.source)
	var joined interface{ Unwrap() []error }
	if errors.As(e.err, &joined) {
		for _, err := range joined.Unwrap() {
			msg += "\n  " + err.Error()
		}
		return msg
	}
	return msg + "\n  " + e.err.Error()
}

// optionalBool is a boolean flag that remembers whether it was given, so
// `--persistence=false` overrides the file and no flag leaves it alone.
type optionalBool struct {
	set   bool
	value bool
}

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.value = true, v
	return nil
}

// IsBoolFlag tells the flag package that the flag takes no value, so that
// `--install-toolkit` alone means true, as for a flag.Bool
// (TestToolkitFlags relies on it).
func (b *optionalBool) IsBoolFlag() bool { return true }

package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Options say where NVML and sysfs come from.
type Options struct {
	// Lib is the NVML binding; nil loads libnvidia-ml.so.1 through go-nvml.
	// Tests pass go-nvml's mocks (pkg/nvml/mock/dgxa100).
	Lib gonvml.Interface
	// SysfsRoot is the directory holding bus/pci/devices; "" means /sys.
	SysfsRoot string
}

// GPUs implements Library over go-nvml. (Contract stub: owned by the nvml
// package's author.)
type GPUs struct {
	opts Options
}

var _ Library = (*GPUs)(nil)

// New returns a Library over NVML. It does not fail when the driver is
// missing: Snapshot reports that.
func New(opts Options) *GPUs { return &GPUs{opts: opts} }

func (g *GPUs) Snapshot() (Snapshot, error)                             { return Snapshot{}, nil }
func (g *GPUs) SetPersistenceMode(uuid string, enabled bool) error      { return ErrNoDriver }
func (g *GPUs) SetComputeMode(uuid string, mode string) error           { return ErrNoDriver }
func (g *GPUs) SetPowerLimit(uuid string, watts uint32) error           { return ErrNoDriver }
func (g *GPUs) SetApplicationClocks(uuid string, mem, gfx uint32) error { return ErrNoDriver }
func (g *GPUs) SetMIGMode(uuid string, enabled bool) (bool, error)      { return false, ErrNoDriver }
func (g *GPUs) ConfigureMIG(uuid string, profiles []string) error       { return ErrNoDriver }
func (g *GPUs) Close() error                                            { return nil }

package nvml

import "errors"

// Snapshot is everything the bootstrap knows about the GPUs of one machine at
// one moment. Fields NVML cannot report on a device (not supported, or no
// permission) are nil rather than zero.
type Snapshot struct {
	Driver   Driver      `json:"driver"`
	Devices  []Device    `json:"devices"`
	Topology []Link      `json:"topology,omitempty"`
	PCI      []PCIDevice `json:"pci"` // NVIDIA PCI functions found in sysfs, with or without a driver
}

// Driver is the state of the NVIDIA kernel driver and user-space library.
type Driver struct {
	Loaded      bool   `json:"loaded"`
	Reason      string `json:"reason,omitempty"`       // why Loaded is false, e.g. "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)"
	Version     string `json:"version,omitempty"`      // "550.54.15"
	CUDAVersion string `json:"cuda_version,omitempty"` // highest CUDA the driver supports, "12.4"
	NVMLVersion string `json:"nvml_version,omitempty"`
}

// Branch is the driver branch, the major version ("550" of "550.54.15").
func (d Driver) Branch() string {
	for i := 0; i < len(d.Version); i++ {
		if d.Version[i] == '.' {
			return d.Version[:i]
		}
	}
	return d.Version
}

// Device is one physical GPU as NVML sees it.
type Device struct {
	Index             int       `json:"index"`
	UUID              string    `json:"uuid"`
	Name              string    `json:"name"`
	PCIBusID          string    `json:"pci_bus_id"`         // "0000:07:00.0", lower case, as sysfs spells it
	Architecture      string    `json:"architecture"`       // "Ampere", "Hopper", …
	ComputeCapability string    `json:"compute_capability"` // "8.0"
	Memory            Memory    `json:"memory"`
	UtilizationGPU    *uint32   `json:"utilization_gpu_percent,omitempty"`
	UtilizationMemory *uint32   `json:"utilization_memory_percent,omitempty"`
	TemperatureC      *uint32   `json:"temperature_c,omitempty"`
	PowerDrawW        *float64  `json:"power_draw_w,omitempty"`
	PowerLimitW       *float64  `json:"power_limit_w,omitempty"`
	PowerLimitMinW    *float64  `json:"power_limit_min_w,omitempty"`
	PowerLimitMaxW    *float64  `json:"power_limit_max_w,omitempty"`
	PersistenceMode   *bool     `json:"persistence_mode,omitempty"`
	ComputeMode       string    `json:"compute_mode,omitempty"` // one of the ComputeMode* constants
	MIG               MIG       `json:"mig"`
	ECC               ECC       `json:"ecc"`
	Processes         []Process `json:"processes"`
	Clocks            Clocks    `json:"clocks"`
	// Lost is true when NVML reports the GPU as fallen off the bus
	// (ERROR_GPU_IS_LOST): it needs a reset or a reboot.
	Lost bool `json:"lost,omitempty"`
	// Error says why the GPU could not be read completely, e.g. "reading
	// UUID: ERROR_GPU_IS_LOST"; the fields read before it are kept. "" when
	// every reading worked or was merely not supported.
	Error string `json:"error,omitempty"`
}

// Compute modes, spelled as nvidia-smi spells them.
const (
	ComputeModeDefault          = "Default"
	ComputeModeExclusiveProcess = "Exclusive_Process"
	ComputeModeProhibited       = "Prohibited"
)

// Memory is framebuffer memory in MiB. ReservedMiB is what the driver keeps
// for itself, nil where the driver lacks nvmlDeviceGetMemoryInfo_v2; then
// UsedMiB includes it (gpu_readings.go).
type Memory struct {
	TotalMiB    uint64  `json:"total_mib"`
	UsedMiB     uint64  `json:"used_mib"`
	FreeMiB     uint64  `json:"free_mib"`
	ReservedMiB *uint64 `json:"reserved_mib,omitempty"`
}

// MIG is a device's Multi-Instance GPU state.
type MIG struct {
	Supported bool        `json:"supported"`
	Current   bool        `json:"current"`           // MIG mode in effect
	Pending   bool        `json:"pending"`           // MIG mode after the next GPU reset
	Devices   []MIGDevice `json:"devices,omitempty"` // GPU instance + compute instance pairs
}

// MIGDevice is one GPU instance (with its compute instances) on a MIG-enabled GPU.
type MIGDevice struct {
	Profile           string `json:"profile"` // "1g.5gb", "3g.20gb", …
	GPUInstanceID     int    `json:"gpu_instance_id"`
	ComputeInstanceID int    `json:"compute_instance_id"`
	UUID              string `json:"uuid,omitempty"`
	MemoryMiB         uint64 `json:"memory_mib,omitempty"`
}

// ECC is the error-correction state and the counters that mean a GPU needs
// attention.
type ECC struct {
	Enabled              *bool   `json:"enabled,omitempty"`
	VolatileUncorrected  *uint64 `json:"volatile_uncorrected,omitempty"`  // since the last driver load
	AggregateUncorrected *uint64 `json:"aggregate_uncorrected,omitempty"` // over the GPU's lifetime
	RetiredPagesPending  *bool   `json:"retired_pages_pending,omitempty"` // a reset is needed to retire pages (pre-Ampere)
	RemappedRowsPending  *bool   `json:"remapped_rows_pending,omitempty"` // a reset is needed to remap rows (Ampere and later)
	RemappedRowsFailure  *bool   `json:"remapped_rows_failure,omitempty"` // row remapping failed: the GPU should be replaced
}

// Process is a compute process holding memory on a GPU.
type Process struct {
	PID           uint32 `json:"pid"`
	Name          string `json:"name,omitempty"`
	UsedMemoryMiB uint64 `json:"used_memory_mib"`
}

// Clocks are current, maximum and application clocks in MHz; nil when NVML
// does not report them.
type Clocks struct {
	GraphicsMHz    *uint32 `json:"graphics_mhz,omitempty"`
	SMMHz          *uint32 `json:"sm_mhz,omitempty"`
	MemoryMHz      *uint32 `json:"memory_mhz,omitempty"`
	MaxGraphicsMHz *uint32 `json:"max_graphics_mhz,omitempty"`
	MaxMemoryMHz   *uint32 `json:"max_memory_mhz,omitempty"`
	AppGraphicsMHz *uint32 `json:"applications_graphics_mhz,omitempty"`
	AppMemoryMHz   *uint32 `json:"applications_memory_mhz,omitempty"`
}

// Link is how two GPUs reach each other, in `nvidia-smi topo -m` terms:
// "NV<n>" (n NVLinks), "PIX", "PXB", "PHB", "NODE" or "SYS".
type Link struct {
	GPU1  int    `json:"gpu1"`
	GPU2  int    `json:"gpu2"`
	Level string `json:"level"`
}

// PCIDevice is an NVIDIA PCI function found in sysfs.
type PCIDevice struct {
	Address  string `json:"address"`          // "0000:07:00.0"
	DeviceID string `json:"device_id"`        // "20b0"
	Class    string `json:"class"`            // "0302" (3D controller), "0300" (VGA)
	Driver   string `json:"driver,omitempty"` // bound kernel driver: "nvidia", "vfio-pci", "" when none
	NUMANode int    `json:"numa_node"`        // -1 when the platform does not say
}

// ErrNoDriver is returned by the setters when no NVIDIA driver is loaded.
var ErrNoDriver = errors.New("no NVIDIA driver loaded")

// Library is what the bootstrap asks of the GPUs. *GPUs implements it over
// go-nvml; it is an interface so bootstrap steps can be tested against
// go-nvml's mocks through the same implementation.
type Library interface {
	// Snapshot reads the state of every GPU. A missing driver is reported in
	// Snapshot.Driver, not as an error; if no driver was found earlier, the
	// library is looked for again, so a driver installed meanwhile is seen.
	Snapshot() (Snapshot, error)
	SetPersistenceMode(uuid string, enabled bool) error
	SetComputeMode(uuid string, mode string) error
	SetPowerLimit(uuid string, watts uint32) error
	SetApplicationClocks(uuid string, memoryMHz, graphicsMHz uint32) error
	// SetMIGMode changes the MIG mode; resetNeeded says the change is only
	// pending until the GPU is reset or the machine reboots.
	SetMIGMode(uuid string, enabled bool) (resetNeeded bool, err error)
	// ConfigureMIG replaces the GPU's MIG instances with one GPU instance and
	// one full compute instance per profile ("1g.5gb", "3g.20gb", …).
	ConfigureMIG(uuid string, profiles []string) error
	Close() error
}

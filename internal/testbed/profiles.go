package testbed

import "slices"

// Profile describes the hardware of one EC2 instance type as a Kubernetes
// node sees it: the vCPUs and memory from AWS's instance type tables, and
// the GPU facts as GPU Feature Discovery reports them (product name with
// dashes, memory per GPU in MiB as NVML reports it).
type Profile struct {
	InstanceType string
	CPU          string // vCPUs, as a Kubernetes quantity
	MemoryGi     int    // GiB

	GPUCount     int // 0 for a CPU-only instance type
	GPUProduct   string
	GPUMemoryMiB int
	Family       string // GFD's architecture family: "hopper", "ampere", "turing"
	ComputeMajor int
	ComputeMinor int
	MIGCapable   bool

	DriverVersion string // NVIDIA driver, "major.minor.revision"
	CUDAVersion   string // CUDA version the driver supports, "major.minor"
}

// HasGPU reports whether the instance type has NVIDIA GPUs.
func (p Profile) HasGPU() bool { return p.GPUCount > 0 }

// The driver the EKS-optimized accelerated AMIs of the 1.31 era ship, and the
// CUDA version it supports.
const (
	defaultDriverVersion = "550.54.15"
	defaultCUDAVersion   = "12.4"
)

// profiles are sorted by instance type.
var profiles = []Profile{
	gpuProfile("g4dn.12xlarge", "48", 192, 4, "Tesla-T4", 15360, "turing", 7, 5, false),
	gpuProfile("g4dn.xlarge", "4", 16, 1, "Tesla-T4", 15360, "turing", 7, 5, false),
	gpuProfile("g5.12xlarge", "48", 192, 4, "NVIDIA-A10G", 23028, "ampere", 8, 6, false),
	gpuProfile("g5.xlarge", "4", 16, 1, "NVIDIA-A10G", 23028, "ampere", 8, 6, false),
	{InstanceType: "m5.xlarge", CPU: "4", MemoryGi: 16},
	gpuProfile("p4d.24xlarge", "96", 1152, 8, "NVIDIA-A100-SXM4-40GB", 40960, "ampere", 8, 0, true),
	gpuProfile("p5.48xlarge", "192", 2048, 8, "NVIDIA-H100-80GB-HBM3", 81559, "hopper", 9, 0, true),
}

func gpuProfile(instanceType, cpu string, memoryGi, gpus int, product string, gpuMemoryMiB int, family string, major, minor int, mig bool) Profile {
	return Profile{
		InstanceType:  instanceType,
		CPU:           cpu,
		MemoryGi:      memoryGi,
		GPUCount:      gpus,
		GPUProduct:    product,
		GPUMemoryMiB:  gpuMemoryMiB,
		Family:        family,
		ComputeMajor:  major,
		ComputeMinor:  minor,
		MIGCapable:    mig,
		DriverVersion: defaultDriverVersion,
		CUDAVersion:   defaultCUDAVersion,
	}
}

// Profiles returns every known instance type, sorted by name.
func Profiles() []Profile { return slices.Clone(profiles) }

// ProfileByInstanceType returns the profile of an EC2 instance type.
func ProfileByInstanceType(instanceType string) (Profile, bool) {
	i := slices.IndexFunc(profiles, func(p Profile) bool { return p.InstanceType == instanceType })
	if i < 0 {
		return Profile{}, false
	}
	return profiles[i], true
}

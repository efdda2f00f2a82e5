// Package ec2catalog holds the facts about EC2 instance types that the
// project needs in more than one place: the vCPUs and memory from AWS's
// instance type tables, and the NVIDIA GPUs as GPU Feature Discovery
// reports them on a node of that type. The testbed's kwok nodes are
// registered from it; the EC2 emulator (and later the provider's EC2
// inventory) read the same table, so that an instance type means the same
// hardware everywhere.
//
// It is data only: no AWS client, no Kubernetes types.
package ec2catalog

import "slices"

// InstanceType describes the hardware of one EC2 instance type as a
// Kubernetes node sees it: the vCPUs and memory from AWS's instance type
// tables, and the GPU facts as GPU Feature Discovery reports them (product
// name with dashes, memory per GPU in MiB as NVML reports it).
type InstanceType struct {
	Name     string // "p5.48xlarge"
	CPU      string // vCPUs, as a Kubernetes quantity
	MemoryGi int    // GiB

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
func (t InstanceType) HasGPU() bool { return t.GPUCount > 0 }

// The driver the EKS-optimized accelerated AMIs of the 1.31 era ship, and the
// CUDA version it supports.
const (
	defaultDriverVersion = "550.54.15"
	defaultCUDAVersion   = "12.4"
)

// instanceTypes are sorted by name.
var instanceTypes = []InstanceType{
	gpuInstanceType("g4dn.12xlarge", "48", 192, 4, "Tesla-T4", 15360, "turing", 7, 5, false),
	gpuInstanceType("g4dn.xlarge", "4", 16, 1, "Tesla-T4", 15360, "turing", 7, 5, false),
	gpuInstanceType("g5.12xlarge", "48", 192, 4, "NVIDIA-A10G", 23028, "ampere", 8, 6, false),
	gpuInstanceType("g5.xlarge", "4", 16, 1, "NVIDIA-A10G", 23028, "ampere", 8, 6, false),
	{Name: "m5.xlarge", CPU: "4", MemoryGi: 16},
	gpuInstanceType("p4d.24xlarge", "96", 1152, 8, "NVIDIA-A100-SXM4-40GB", 40960, "ampere", 8, 0, true),
	gpuInstanceType("p5.48xlarge", "192", 2048, 8, "NVIDIA-H100-80GB-HBM3", 81559, "hopper", 9, 0, true),
}

func gpuInstanceType(name, cpu string, memoryGi, gpus int, product string, gpuMemoryMiB int, family string, major, minor int, mig bool) InstanceType {
	return InstanceType{
		Name:          name,
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

// All returns every known instance type, sorted by name.
func All() []InstanceType { return slices.Clone(instanceTypes) }

// Lookup returns the instance type of that name.
func Lookup(name string) (InstanceType, bool) {
	i := slices.IndexFunc(instanceTypes, func(t InstanceType) bool { return t.Name == name })
	if i < 0 {
		return InstanceType{}, false
	}
	return instanceTypes[i], true
}

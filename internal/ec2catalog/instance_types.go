// Package ec2catalog holds the facts about EC2 instance types that the
// project needs in more than one place: the vCPUs, memory, architecture and
// accelerators from AWS's instance type tables, and the NVIDIA GPUs as GPU
// Feature Discovery reports them on a node of that type. The testbed's kwok
// nodes are registered from it; the EC2 emulator (and later the provider's
// EC2 inventory) read the same table, so that an instance type means the
// same hardware everywhere.
//
// It is data only: no AWS client, no Kubernetes types.
package ec2catalog

import "slices"

// InstanceType describes the hardware of one EC2 instance type as a
// Kubernetes node sees it: the vCPUs, memory and architecture from AWS's
// instance type tables, the accelerators as EC2's DescribeInstanceTypes
// reports them, and, for NVIDIA GPUs, the GPU facts as GPU Feature Discovery
// reports them (product name with dashes, memory per GPU in MiB as NVML
// reports it).
type InstanceType struct {
	Name         string // "p5.48xlarge"
	CPU          string // vCPUs, as a Kubernetes quantity
	MemoryGi     int    // GiB
	Architecture string // ArchitectureX86_64 or ArchitectureARM64, as EC2 names it

	// EC2Accelerator is what DescribeInstanceTypes reports: NVIDIA, AMD and
	// Habana devices under GpuInfo, AWS's own under NeuronInfo. Zero for a
	// type without accelerators.
	EC2Accelerator Accelerator

	// The NVIDIA GPUs as GFD labels them; zero unless the accelerators are
	// NVIDIA GPUs.
	GPUCount     int // 0 for a type without NVIDIA GPUs
	GPUProduct   string
	GPUMemoryMiB int    // as NVML reports it, less than EC2Accelerator.MemoryMiB
	Family       string // GFD's architecture family: "hopper", "ada-lovelace", "ampere", "turing", "volta"
	ComputeMajor int
	ComputeMinor int
	MIGCapable   bool

	DriverVersion string // NVIDIA driver, "major.minor.revision"
	CUDAVersion   string // CUDA version the driver supports, "major.minor"
}

// Accelerator is one instance type's accelerators as EC2's
// DescribeInstanceTypes reports them.
type Accelerator struct {
	Info         string // AcceleratorInfoGPU or AcceleratorInfoNeuron: the part of the response that lists them
	Manufacturer string // "NVIDIA", "AMD", "Habana", "AWS"
	Name         string // "H100", "Radeon Pro V520", "Gaudi HL-205", "Inferentia2"
	Count        int
	MemoryMiB    int // per device: GpuInfo's or NeuronInfo's MemoryInfo.SizeInMiB
}

// Architectures as EC2's ProcessorInfo.SupportedArchitectures names them.
const (
	ArchitectureX86_64 = "x86_64"
	ArchitectureARM64  = "arm64"
)

// Where DescribeInstanceTypes lists an instance type's accelerators.
const (
	AcceleratorInfoGPU    = "GpuInfo"
	AcceleratorInfoNeuron = "NeuronInfo"
)

// ManufacturerNVIDIA is GpuInfo's Manufacturer for NVIDIA GPUs.
const ManufacturerNVIDIA = "NVIDIA"

// HasGPU reports whether the instance type has NVIDIA GPUs.
func (t InstanceType) HasGPU() bool { return t.GPUCount > 0 }

// Accelerators says in words what accelerators the instance type has, for
// errors such as "g4ad.xlarge has AMD Radeon Pro V520 GPUs; NVIDIA AMI types
// need NVIDIA GPUs": "NVIDIA H100 GPUs", "AWS Inferentia2 Neuron devices",
// "Habana Gaudi HL-205 accelerators", or "no accelerators".
func (t InstanceType) Accelerators() string {
	a := t.EC2Accelerator
	if a.Count == 0 {
		return "no accelerators"
	}
	kind := "GPUs"
	switch {
	case a.Info == AcceleratorInfoNeuron:
		kind = "Neuron devices"
	case a.Manufacturer == "Habana":
		// EC2 lists Gaudi under GpuInfo; it is not a GPU.
		kind = "accelerators"
	}
	return a.Manufacturer + " " + a.Name + " " + kind
}

// The driver the EKS-optimized accelerated AMIs of the 1.31 era ship, and the
// CUDA version it supports.
const (
	defaultDriverVersion = "550.54.15"
	defaultCUDAVersion   = "12.4"
)

// nvidiaGPU is one NVIDIA GPU model: its GFD facts and its EC2 facts.
type nvidiaGPU struct {
	product      string // GFD: NVML's product name, spaces replaced by dashes
	nvmlMiB      int    // GFD's nvidia.com/gpu.memory: NVML's total memory
	family       string // GFD's family, from the compute capability
	major, minor int
	mig          bool
	ec2Name      string // GpuInfo Name
	ec2MiB       int    // GpuInfo MemoryInfo.SizeInMiB
}

// The GPU models of the table. NVML memory: the values gpulabels.KnownProducts
// holds, V100 16160 and H200 143771 as nvidia-smi prints them on p3 and p5e;
// T4G's 15360 is derived (the same 16 GB TU104 memory as T4), not published.
// EC2 memory: GpuInfo's per-GPU MemoryInfo.SizeInMiB as DescribeInstanceTypes
// returns it. It is not always more than NVML's: EC2 lists an L4 with 22888
// MiB and an L40S with 45776, NVML reports 23034 and 46068.
var (
	teslaT4         = nvidiaGPU{"Tesla-T4", 15360, "turing", 7, 5, false, "T4", 16384}
	nvidiaT4G       = nvidiaGPU{"NVIDIA-T4G", 15360, "turing", 7, 5, false, "T4g", 16384}
	nvidiaA10G      = nvidiaGPU{"NVIDIA-A10G", 23028, "ampere", 8, 6, false, "A10G", 24576}
	nvidiaL4        = nvidiaGPU{"NVIDIA-L4", 23034, "ada-lovelace", 8, 9, false, "L4", 22888}
	nvidiaL40S      = nvidiaGPU{"NVIDIA-L40S", 46068, "ada-lovelace", 8, 9, false, "L40S", 45776}
	teslaV100       = nvidiaGPU{"Tesla-V100-SXM2-16GB", 16160, "volta", 7, 0, false, "V100", 16384}
	nvidiaA100SXM40 = nvidiaGPU{"NVIDIA-A100-SXM4-40GB", 40960, "ampere", 8, 0, true, "A100", 40960}
	nvidiaA100SXM80 = nvidiaGPU{"NVIDIA-A100-SXM4-80GB", 81920, "ampere", 8, 0, true, "A100", 81920}
	nvidiaH100      = nvidiaGPU{"NVIDIA-H100-80GB-HBM3", 81559, "hopper", 9, 0, true, "H100", 81920}
	nvidiaH200      = nvidiaGPU{"NVIDIA-H200", 143771, "hopper", 9, 0, true, "H200", 144384}
)

// The other accelerators, as DescribeInstanceTypes reports one device.
// Neuron devices have no Manufacturer in NeuronInfo; "AWS" is what the
// older InferenceAcceleratorInfo reports for AWS's own chips.
var (
	amdV520      = Accelerator{Info: AcceleratorInfoGPU, Manufacturer: "AMD", Name: "Radeon Pro V520", MemoryMiB: 8192}
	habanaGaudi  = Accelerator{Info: AcceleratorInfoGPU, Manufacturer: "Habana", Name: "Gaudi HL-205", MemoryMiB: 32768}
	inferentia2  = Accelerator{Info: AcceleratorInfoNeuron, Manufacturer: "AWS", Name: "Inferentia2", MemoryMiB: 32768}
	awsTrainium1 = Accelerator{Info: AcceleratorInfoNeuron, Manufacturer: "AWS", Name: "Trainium", MemoryMiB: 32768}
)

const (
	x86 = ArchitectureX86_64
	arm = ArchitectureARM64
)

// instanceTypes are sorted by name. vCPUs, memory, architecture and
// accelerators are from AWS's tables:
//   - https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
//     (Accelerated computing instance specifications: g4ad, g4dn, g5, g5g,
//     g6, g6e, gr6, p3, p4d, p4de, p5, p5e, p5en, inf2, trn1, dl1)
//   - https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html (m5, m6i, m7g)
//   - https://docs.aws.amazon.com/ec2/latest/instancetypes/co.html (c6i)
//   - https://aws.amazon.com/blogs/compute/amazon-ec2-dl1-instances-deep-dive/
//     (dl1: 8 Gaudi with 32 GB HBM2 each, 96 vCPUs, 768 GiB)
//   - https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_GpuDeviceInfo.html
//     and API_NeuronDeviceInfo.html (the shape of EC2Accelerator)
//
// The GpuInfo values (name, manufacturer, count, MiB) were checked against
// DescribeInstanceTypes output as others recorded it:
// https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v8/aws/vms.csv
// (g6, g6e, gr6, p5, p5e, p5en) and
// https://github.com/weldpua2008/aws.ec2.compare/tree/main/ec2_compare/internal/instance_type
// (g4ad, g4dn, g5, g5g, p3, p4d, dl1, m5, m6i, c6i). The inf2, trn1, p4de and
// m7g rows are from AWS's tables alone, not from API output.
//
// GFD's product names are NVML's names with spaces replaced by dashes
// (k8s-device-plugin, internal/lm/resource.go); its family follows the
// compute capability as getArchFamily maps it.
var instanceTypes = []InstanceType{
	cpuType("c6i.32xlarge", x86, "128", 256),
	cpuType("c6i.large", x86, "2", 4),
	otherType("dl1.24xlarge", x86, "96", 768, 8, habanaGaudi),
	otherType("g4ad.16xlarge", x86, "64", 256, 4, amdV520),
	otherType("g4ad.2xlarge", x86, "8", 32, 1, amdV520),
	otherType("g4ad.4xlarge", x86, "16", 64, 1, amdV520),
	otherType("g4ad.8xlarge", x86, "32", 128, 2, amdV520),
	otherType("g4ad.xlarge", x86, "4", 16, 1, amdV520),
	nvidiaType("g4dn.12xlarge", x86, "48", 192, 4, teslaT4),
	nvidiaType("g4dn.16xlarge", x86, "64", 256, 1, teslaT4),
	nvidiaType("g4dn.2xlarge", x86, "8", 32, 1, teslaT4),
	nvidiaType("g4dn.4xlarge", x86, "16", 64, 1, teslaT4),
	nvidiaType("g4dn.8xlarge", x86, "32", 128, 1, teslaT4),
	nvidiaType("g4dn.metal", x86, "96", 384, 8, teslaT4),
	nvidiaType("g4dn.xlarge", x86, "4", 16, 1, teslaT4),
	nvidiaType("g5.12xlarge", x86, "48", 192, 4, nvidiaA10G),
	nvidiaType("g5.16xlarge", x86, "64", 256, 1, nvidiaA10G),
	nvidiaType("g5.24xlarge", x86, "96", 384, 4, nvidiaA10G),
	nvidiaType("g5.2xlarge", x86, "8", 32, 1, nvidiaA10G),
	nvidiaType("g5.48xlarge", x86, "192", 768, 8, nvidiaA10G),
	nvidiaType("g5.4xlarge", x86, "16", 64, 1, nvidiaA10G),
	nvidiaType("g5.8xlarge", x86, "32", 128, 1, nvidiaA10G),
	nvidiaType("g5.xlarge", x86, "4", 16, 1, nvidiaA10G),
	nvidiaType("g5g.16xlarge", arm, "64", 128, 2, nvidiaT4G),
	nvidiaType("g5g.2xlarge", arm, "8", 16, 1, nvidiaT4G),
	nvidiaType("g5g.4xlarge", arm, "16", 32, 1, nvidiaT4G),
	nvidiaType("g5g.8xlarge", arm, "32", 64, 1, nvidiaT4G),
	nvidiaType("g5g.metal", arm, "64", 128, 2, nvidiaT4G),
	nvidiaType("g5g.xlarge", arm, "4", 8, 1, nvidiaT4G),
	nvidiaType("g6.12xlarge", x86, "48", 192, 4, nvidiaL4),
	nvidiaType("g6.16xlarge", x86, "64", 256, 1, nvidiaL4),
	nvidiaType("g6.24xlarge", x86, "96", 384, 4, nvidiaL4),
	nvidiaType("g6.2xlarge", x86, "8", 32, 1, nvidiaL4),
	nvidiaType("g6.48xlarge", x86, "192", 768, 8, nvidiaL4),
	nvidiaType("g6.4xlarge", x86, "16", 64, 1, nvidiaL4),
	nvidiaType("g6.8xlarge", x86, "32", 128, 1, nvidiaL4),
	nvidiaType("g6.xlarge", x86, "4", 16, 1, nvidiaL4),
	nvidiaType("g6e.12xlarge", x86, "48", 384, 4, nvidiaL40S),
	nvidiaType("g6e.16xlarge", x86, "64", 512, 1, nvidiaL40S),
	nvidiaType("g6e.24xlarge", x86, "96", 768, 4, nvidiaL40S),
	nvidiaType("g6e.2xlarge", x86, "8", 64, 1, nvidiaL40S),
	nvidiaType("g6e.48xlarge", x86, "192", 1536, 8, nvidiaL40S),
	nvidiaType("g6e.4xlarge", x86, "16", 128, 1, nvidiaL40S),
	nvidiaType("g6e.8xlarge", x86, "32", 256, 1, nvidiaL40S),
	nvidiaType("g6e.xlarge", x86, "4", 32, 1, nvidiaL40S),
	nvidiaType("gr6.4xlarge", x86, "16", 128, 1, nvidiaL4),
	nvidiaType("gr6.8xlarge", x86, "32", 256, 1, nvidiaL4),
	otherType("inf2.24xlarge", x86, "96", 384, 6, inferentia2),
	otherType("inf2.48xlarge", x86, "192", 768, 12, inferentia2),
	otherType("inf2.8xlarge", x86, "32", 128, 1, inferentia2),
	otherType("inf2.xlarge", x86, "4", 16, 1, inferentia2),
	cpuType("m5.24xlarge", x86, "96", 384),
	cpuType("m5.large", x86, "2", 8),
	cpuType("m5.xlarge", x86, "4", 16),
	cpuType("m6i.32xlarge", x86, "128", 512),
	cpuType("m6i.large", x86, "2", 8),
	cpuType("m7g.16xlarge", arm, "64", 256),
	cpuType("m7g.large", arm, "2", 8),
	nvidiaType("p3.16xlarge", x86, "64", 488, 8, teslaV100),
	nvidiaType("p3.2xlarge", x86, "8", 61, 1, teslaV100),
	nvidiaType("p3.8xlarge", x86, "32", 244, 4, teslaV100),
	nvidiaType("p4d.24xlarge", x86, "96", 1152, 8, nvidiaA100SXM40),
	nvidiaType("p4de.24xlarge", x86, "96", 1152, 8, nvidiaA100SXM80),
	nvidiaType("p5.48xlarge", x86, "192", 2048, 8, nvidiaH100),
	nvidiaType("p5.4xlarge", x86, "16", 256, 1, nvidiaH100),
	nvidiaType("p5e.48xlarge", x86, "192", 2048, 8, nvidiaH200),
	nvidiaType("p5en.48xlarge", x86, "192", 2048, 8, nvidiaH200),
	// EKS's default instance type for a node group created without
	// instanceTypes (CreateNodegroup): 2 vCPUs, 4 GiB, no accelerators.
	cpuType("t3.medium", x86, "2", 4),
	otherType("trn1.2xlarge", x86, "8", 32, 1, awsTrainium1),
	otherType("trn1.32xlarge", x86, "128", 512, 16, awsTrainium1),
}

func cpuType(name, arch, cpu string, memoryGi int) InstanceType {
	return InstanceType{Name: name, CPU: cpu, MemoryGi: memoryGi, Architecture: arch}
}

// otherType is a type whose accelerators are not NVIDIA GPUs: no GFD facts.
func otherType(name, arch, cpu string, memoryGi, count int, device Accelerator) InstanceType {
	t := cpuType(name, arch, cpu, memoryGi)
	t.EC2Accelerator = device
	t.EC2Accelerator.Count = count
	return t
}

func nvidiaType(name, arch, cpu string, memoryGi, gpus int, gpu nvidiaGPU) InstanceType {
	return InstanceType{
		Name:         name,
		CPU:          cpu,
		MemoryGi:     memoryGi,
		Architecture: arch,
		EC2Accelerator: Accelerator{
			Info: AcceleratorInfoGPU, Manufacturer: ManufacturerNVIDIA, Name: gpu.ec2Name, Count: gpus, MemoryMiB: gpu.ec2MiB,
		},
		GPUCount:      gpus,
		GPUProduct:    gpu.product,
		GPUMemoryMiB:  gpu.nvmlMiB,
		Family:        gpu.family,
		ComputeMajor:  gpu.major,
		ComputeMinor:  gpu.minor,
		MIGCapable:    gpu.mig,
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

// Package gpulabels names the node labels, the taint and the extended
// resource through which a Kubernetes node tells the world about its NVIDIA
// GPUs.
//
// The label keys are the ones NVIDIA GPU Feature Discovery (GFD, part of
// k8s-device-plugin) writes, spelled as in its labelers; the resource name is
// the one the NVIDIA device plugin advertises. The provider reads them to
// select nodes by GPU model, memory and count; the local testbed writes them
// on its simulated nodes. Keep this package free of dependencies: it is only
// names.
package gpulabels

// ResourceName is the extended resource the NVIDIA device plugin advertises
// in a node's capacity and that pods request in their limits.
const ResourceName = "nvidia.com/gpu"

// TaintKey is the taint key conventionally put on GPU nodes (EKS, GKE and the
// GPU Operator docs use it) so that only pods tolerating it land there.
const TaintKey = "nvidia.com/gpu"

// Labels written by GPU Feature Discovery for full (non-MIG) GPUs.
const (
	// Product is the GPU model with spaces turned into dashes, e.g. "NVIDIA-H100-80GB-HBM3".
	Product = "nvidia.com/gpu.product"
	// Count is the number of GPUs on the node.
	Count = "nvidia.com/gpu.count"
	// Memory is the memory of one GPU in MiB, e.g. "81559".
	Memory = "nvidia.com/gpu.memory"
	// Family is the architecture family, e.g. "hopper", "ampere", "turing".
	Family = "nvidia.com/gpu.family"
	// ComputeMajor is the major part of the CUDA compute capability.
	ComputeMajor = "nvidia.com/gpu.compute.major"
	// ComputeMinor is the minor part of the CUDA compute capability.
	ComputeMinor = "nvidia.com/gpu.compute.minor"
	// Replicas is how many pods may share one GPU (1 unless time-slicing is configured).
	Replicas = "nvidia.com/gpu.replicas"
	// SharingStrategy is "none", "time-slicing" or "mps".
	SharingStrategy = "nvidia.com/gpu.sharing-strategy"
	// Machine is the machine type as DMI reports it; on EC2 the instance type.
	Machine = "nvidia.com/gpu.machine"
	// Mode is "compute" or "graphics" (from the GPU's PCI class).
	Mode = "nvidia.com/gpu.mode"
	// MIGCapable is "true" when any GPU on the node supports MIG.
	MIGCapable = "nvidia.com/mig.capable"
	// MIGStrategy is set only when GFD runs with a MIG strategy other than "none".
	MIGStrategy = "nvidia.com/mig.strategy"
	// MPSCapable is "true" when MPS sharing is configured and possible.
	MPSCapable = "nvidia.com/mps.capable"
)

// Driver and CUDA version labels written by GPU Feature Discovery.
const (
	// DriverVersionFull is the NVIDIA driver version, e.g. "550.54.15".
	DriverVersionFull     = "nvidia.com/cuda.driver-version.full"
	DriverVersionMajor    = "nvidia.com/cuda.driver-version.major"
	DriverVersionMinor    = "nvidia.com/cuda.driver-version.minor"
	DriverVersionRevision = "nvidia.com/cuda.driver-version.revision"
	// RuntimeVersionFull is the CUDA version the driver supports, e.g. "12.4".
	RuntimeVersionFull  = "nvidia.com/cuda.runtime-version.full"
	RuntimeVersionMajor = "nvidia.com/cuda.runtime-version.major"
	RuntimeVersionMinor = "nvidia.com/cuda.runtime-version.minor"

	// The older spellings GFD still writes next to the new ones.
	DeprecatedDriverMajor  = "nvidia.com/cuda.driver.major"
	DeprecatedDriverMinor  = "nvidia.com/cuda.driver.minor"
	DeprecatedDriverRev    = "nvidia.com/cuda.driver.rev"
	DeprecatedRuntimeMajor = "nvidia.com/cuda.runtime.major"
	DeprecatedRuntimeMinor = "nvidia.com/cuda.runtime.minor"
)

// Present is set to "true" by the GPU Operator's node feature rules on nodes
// that have an NVIDIA PCI device, before any GFD label exists.
const Present = "nvidia.com/gpu.present"

// NFDPCIPresent is set by Node Feature Discovery on nodes with an NVIDIA
// (PCI vendor 10de) device, before any driver or GFD runs.
const NFDPCIPresent = "feature.node.kubernetes.io/pci-10de.present"

// InstanceType is the well-known label with the cloud instance type.
const InstanceType = "node.kubernetes.io/instance-type"

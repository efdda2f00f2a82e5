package nvdra

// DriverVersion is the release of NVIDIA's DRA driver whose ResourceSlices,
// DeviceClasses and Helm chart this project models.
const DriverVersion = "v25.8.1"

// DriverName is the gpu-kubelet-plugin's driver name (cmd/gpu-kubelet-plugin/
// main.go): every device it publishes has device.driver == DriverName, and
// its attributes are qualified with it in CEL
// (device.attributes['gpu.nvidia.com'].productName).
const DriverName = "gpu.nvidia.com"

// The DeviceClasses the Helm chart creates (templates/deviceclass-*.yaml);
// each selects the driver's devices of one type.
const (
	DeviceClassGPU = "gpu.nvidia.com" // type == 'gpu': a whole GPU
	DeviceClassMIG = "mig.nvidia.com" // type == 'mig': a MIG device
)

// Values of the "type" attribute (cmd/gpu-kubelet-plugin/types.go).
const (
	DeviceTypeGPU = "gpu"
	DeviceTypeMIG = "mig"
)

// Attribute names of a published device (cmd/gpu-kubelet-plugin/
// deviceinfo.go, GetDevice). Version-typed attributes hold semantic
// versions ("9.0.0" for compute capability 9.0, "12.8.0" for CUDA 12.8).
const (
	AttrType                  = "type"                  // string: DeviceTypeGPU or DeviceTypeMIG
	AttrUUID                  = "uuid"                  // string: GPU-… or MIG-…
	AttrParentUUID            = "parentUUID"            // string, MIG devices only
	AttrProfile               = "profile"               // string, MIG devices only: "1g.10gb"
	AttrProductName           = "productName"           // string: "NVIDIA H100 80GB HBM3"
	AttrBrand                 = "brand"                 // string: "Nvidia"
	AttrArchitecture          = "architecture"          // string: "Hopper"
	AttrCUDAComputeCapability = "cudaComputeCapability" // version
	AttrDriverVersion         = "driverVersion"         // version: "580.95.5"
	AttrCUDADriverVersion     = "cudaDriverVersion"     // version
	AttrPCIeBusID             = "pcieBusID"             // string: "0000:9a:00.0"
)

// Capacity names of a published device.
const (
	CapacityMemory          = "memory"          // bytes, whole GPUs and MIG devices
	CapacityMultiprocessors = "multiprocessors" // MIG devices only
)

// AttrPCIeRoot is the standard attribute the gpu-kubelet-plugin adds when it
// can resolve the GPU's PCIe root complex from sysfs (deviceinfo.go: the
// pcieRootAttr from k8s.io/dynamic-resource-allocation/deviceattribute,
// StandardDeviceAttributePCIeRoot): "pci0000:50". Being outside the
// driver's domain, CEL reads it as device.attributes['resource.kubernetes.io'].pcieRoot.
const AttrPCIeRoot = "resource.kubernetes.io/pcieRoot"

// More capacity names of MIG devices (deviceinfo.go, MigDeviceInfo.GetDevice):
// the engine counts of the device's GPU instance profile, and one
// memorySlice<N> capacity of 1 for each memory slice N its placement
// occupies.
const (
	CapacityCopyEngines       = "copyEngines"
	CapacityDecoders          = "decoders"
	CapacityEncoders          = "encoders"
	CapacityJPEGEngines       = "jpegEngines"
	CapacityOFAEngines        = "ofaEngines"
	CapacityMemorySlicePrefix = "memorySlice" // + the slice's index: "memorySlice0"
)

// The Helm chart's kubelet-plugin DaemonSet (templates/kubeletplugin.yaml,
// values.yaml): the image every container runs, and the name of the
// container that runs gpu-kubelet-plugin (the one that publishes GPUs; its
// sibling "compute-domains" runs compute-domain-kubelet-plugin).
const (
	ImageRepository            = "nvcr.io/nvidia/k8s-dra-driver-gpu"
	KubeletPluginGPUsContainer = "gpus"
)

package nvdra

import (
	"fmt"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// nvmlProductNames maps GPU Feature Discovery's product label (NVML's name
// with spaces replaced by dashes, as internal/ec2catalog holds it) back to
// NVML's name, which the plugin publishes as productName: the dashes NVML's
// own names contain ("A100-SXM4-40GB") make the label irreversible by rule.
var nvmlProductNames = map[string]string{
	"Tesla-T4":              "Tesla T4",
	"NVIDIA-T4G":            "NVIDIA T4G",
	"NVIDIA-A10G":           "NVIDIA A10G",
	"NVIDIA-L4":             "NVIDIA L4",
	"NVIDIA-L40S":           "NVIDIA L40S",
	"Tesla-V100-SXM2-16GB":  "Tesla V100-SXM2-16GB",
	"NVIDIA-A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
	"NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
	"NVIDIA-H100-80GB-HBM3": "NVIDIA H100 80GB HBM3",
	"NVIDIA-H200":           "NVIDIA H200",
}

// nvmlArchitectures maps GFD's architecture family (ec2catalog's Family) to
// the architecture string go-nvlib's GetArchitectureAsString returns for it.
var nvmlArchitectures = map[string]string{
	"volta":        "Volta",
	"turing":       "Turing",
	"ampere":       "Ampere",
	"ada-lovelace": "Ada Lovelace",
	"hopper":       "Hopper",
	"blackwell":    "Blackwell",
}

// Brand is the brand the plugin publishes for data-center GPUs: NVML's
// NVML_BRAND_NVIDIA, which go-nvlib's GetBrandAsString spells "Nvidia"
// (seen on A100s in kubernetes-sigs/dra-driver-nvidia-gpu issue #719).
const Brand = "Nvidia"

// GPUOf returns the facts every GPU of the instance type shares, as the
// plugin would read them through NVML: product name, brand, architecture,
// compute capability, memory and the driver's versions. Minor, UUID and
// the PCIe facts are per GPU and left empty. It errs for a type without
// NVIDIA GPUs or with a GPU this package cannot name.
func GPUOf(it ec2catalog.InstanceType) (GPU, error) {
	if !it.HasGPU() {
		return GPU{}, fmt.Errorf("instance type %s has no NVIDIA GPUs", it.Name)
	}
	name, ok := nvmlProductNames[it.GPUProduct]
	if !ok {
		return GPU{}, fmt.Errorf("instance type %s: no NVML product name known for %s", it.Name, it.GPUProduct)
	}
	arch, ok := nvmlArchitectures[it.Family]
	if !ok {
		return GPU{}, fmt.Errorf("instance type %s: no NVML architecture known for family %q", it.Name, it.Family)
	}
	return GPU{
		ProductName:           name,
		Brand:                 Brand,
		Architecture:          arch,
		CUDAComputeCapability: fmt.Sprintf("%d.%d", it.ComputeMajor, it.ComputeMinor),
		MemoryBytes:           int64(it.GPUMemoryMiB) << 20,
		DriverVersion:         it.DriverVersion,
		CUDADriverVersion:     it.CUDAVersion,
	}, nil
}

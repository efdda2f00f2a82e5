package eks

import "strings"

// The AMI types of EKS managed node groups that have an NVIDIA driver
// (EKS's AMITypes enum), and CUSTOM, the AMI of a launch template.
const (
	AMITypeAL2023x86NVIDIA       = "AL2023_x86_64_NVIDIA"
	AMITypeAL2023ARMNVIDIA       = "AL2023_ARM_64_NVIDIA"
	AMITypeAL2x86GPU             = "AL2_x86_64_GPU"
	AMITypeBottlerocketx86NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
	AMITypeBottlerocketARMNVIDIA = "BOTTLEROCKET_ARM_64_NVIDIA"
	AMITypeCustom                = "CUSTOM"
)

// NVIDIAAMITypes lists the AMI types with an NVIDIA driver, then CUSTOM.
var NVIDIAAMITypes = []string{
	AMITypeAL2023x86NVIDIA, AMITypeAL2023ARMNVIDIA, AMITypeAL2x86GPU, AMITypeBottlerocketx86NVIDIA, AMITypeBottlerocketARMNVIDIA, AMITypeCustom,
}

// amiArchitecture is the EC2 architecture each NVIDIA AMI type runs on.
var amiArchitecture = map[string]string{
	AMITypeAL2023x86NVIDIA:       "x86_64",
	AMITypeAL2023ARMNVIDIA:       "arm64",
	AMITypeAL2x86GPU:             "x86_64",
	AMITypeBottlerocketx86NVIDIA: "x86_64",
	AMITypeBottlerocketARMNVIDIA: "arm64",
}

// AMIArchitecture is the EC2 architecture ("x86_64", "arm64") amiType runs
// on; false for CUSTOM, which runs on any, and for a type it does not know.
func AMIArchitecture(amiType string) (string, bool) {
	arch, ok := amiArchitecture[amiType]
	return arch, ok
}

// DefaultAMIType is the AMI type for NVIDIA instances of arch: Amazon
// Linux 2023's.
func DefaultAMIType(arch string) string {
	if arch == "arm64" {
		return AMITypeAL2023ARMNVIDIA
	}
	return AMITypeAL2023x86NVIDIA
}

// MatchingAMIType is the AMI type of amiType's family (Bottlerocket or
// Amazon Linux) for arch.
func MatchingAMIType(amiType, arch string) string {
	if strings.HasPrefix(amiType, "BOTTLEROCKET_") {
		if arch == "arm64" {
			return AMITypeBottlerocketARMNVIDIA
		}
		return AMITypeBottlerocketx86NVIDIA
	}
	return DefaultAMIType(arch)
}

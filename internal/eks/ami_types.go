package eks

import (
	"fmt"
	"strconv"
	"strings"
)

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

// lastAL2Minor is the last Kubernetes minor version (1.x) for which EKS
// released AL2 AMIs, accelerated (AL2_x86_64_GPU) included: "Amazon EKS
// stopped publishing EKS-optimized Amazon Linux 2 (AL2) AMIs on November
// 26, 2025. AL2023 and Bottlerocket based Amazon EKS AMIs are available
// for all supported Kubernetes versions including 1.33 and higher."
// https://docs.aws.amazon.com/eks/latest/userguide/eks-ami-deprecation-faqs.html
// (and "Kubernetes version 1.32 is the last version for which Amazon EKS
// will release AL2 AMIs", the 1.32 release notes,
// https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions-standard.html).
const lastAL2Minor = 32

// AMITypeEnds reports whether EKS stops publishing amiType's AMIs at some
// Kubernetes version (see AMITypeUnavailable).
func AMITypeEnds(amiType string) bool { return amiType == AMITypeAL2x86GPU }

// AMITypeUnavailable says why EKS offers no AMI of amiType for Kubernetes
// version ("1.33", "1.33.1"), or "" when it does or the version is not of
// the form 1.x. Only AL2's end is known here: AL2023 and Bottlerocket AMIs
// exist for every version EKS supports.
func AMITypeUnavailable(amiType, version string) string {
	if !AMITypeEnds(amiType) {
		return ""
	}
	major, rest, ok := strings.Cut(version, ".")
	minorText, _, _ := strings.Cut(rest, ".")
	minor, err := strconv.Atoi(minorText)
	if !ok || major != "1" || err != nil || minor <= lastAL2Minor {
		return ""
	}
	return fmt.Sprintf("EKS publishes no %s AMI for Kubernetes %s: AL2 AMIs ended with 1.%d (EKS stopped releasing them on November 26, 2025)",
		amiType, version, lastAL2Minor)
}

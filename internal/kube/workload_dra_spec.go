package kube

import (
	"fmt"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// GPUAllocation is how a workload's pods get their GPUs.
type GPUAllocation string

// The ways, spelled as gpu_workload's gpu.allocation.
const (
	// AllocateDevicePlugin asks for an extended resource (nvidia.com/gpu)
	// that NVIDIA's device plugin advertises, on nodes GFD labels.
	AllocateDevicePlugin GPUAllocation = "device_plugin"
	// AllocateDRA asks for devices that NVIDIA's DRA driver publishes in
	// ResourceSlices, through a ResourceClaimTemplate the scheduler
	// allocates from.
	AllocateDRA GPUAllocation = "dra"
)

// GPUChoice is one way a pod's GPU need can be met: so many devices of a
// kind. A DRA workload lists its choices in order (firstAvailable); the
// device plugin knows only the first.
type GPUChoice struct {
	Count        int64
	Products     []string // GFD's spelling, e.g. "NVIDIA-H100-80GB-HBM3"; any when empty
	MinMemoryGiB int64    // 0: any
	MinCompute   *ComputeCapability
	MIGProfile   string // MIG devices of this profile instead of whole GPUs
}

// Choices are the ways g can be met, in order of preference: g's own
// criteria first, then its Alternatives. MinCUDA holds for every one.
func (g WorkloadGPU) Choices() []GPUChoice {
	first := GPUChoice{Count: g.Count, Products: g.Products, MinMemoryGiB: g.MinMemoryGiB, MinCompute: g.MinCompute, MIGProfile: g.MIGProfile}
	return append([]GPUChoice{first}, g.Alternatives...)
}

// DRA reports whether g's devices come through DRA.
func (g WorkloadGPU) DRA() bool { return g.Allocation == AllocateDRA }

// CUDAVersion is the highest CUDA version a driver supports, e.g. 12.4,
// as nvidia-smi shows it and NVIDIA's DRA driver publishes it
// (cudaDriverVersion "12.4.0").
type CUDAVersion struct{ Major, Minor int }

// ParseCUDAVersion reads "major.minor", e.g. "12.4".
func ParseCUDAVersion(s string) (CUDAVersion, error) {
	major, minor, err := parseMajorMinor(s)
	if err != nil {
		return CUDAVersion{}, fmt.Errorf("CUDA version %q is not of the form major.minor, e.g. \"12.4\"", s)
	}
	return CUDAVersion{Major: major, Minor: minor}, nil
}

func (v CUDAVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is least or newer.
func (v CUDAVersion) AtLeast(least CUDAVersion) bool {
	return v.Major > least.Major || (v.Major == least.Major && v.Minor >= least.Minor)
}

// parseMajorMinor reads "major.minor" of two unsigned decimal numbers.
func parseMajorMinor(s string) (major, minor int, err error) {
	a, b, ok := strings.Cut(s, ".")
	if !ok || a == "" || b == "" || strings.ContainsAny(s, "+-") {
		return 0, 0, fmt.Errorf("%q is not major.minor", s)
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q is not major.minor", s)
	}
	return major, minor, nil
}

// DRAClaimName is the name of the pod's resource claim and of the
// request in it that a DRA workload's container uses.
const DRAClaimName = "gpu"

// draChoiceName names the subrequest of choice i (from 0) of a
// firstAvailable request: "option-1", "option-2", ...
func draChoiceName(i int) string { return "option-" + strconv.Itoa(i+1) }

// draAttr is a CEL reference to an attribute of the NVIDIA driver's device.
func draAttr(name string) string {
	return "device.attributes['" + nvdra.DriverName + "']." + name
}

// DRASelectors are the CEL expressions a device must meet to serve choice c
// with at least minCUDA (nil: any), written with the NVIDIA DRA driver's
// attribute and capacity names. Products are compared in GFD's spelling
// (the product name with its spaces turned into dashes), so one products
// list serves both ways of allocating.
func DRASelectors(c GPUChoice, minCUDA *CUDAVersion) []string {
	var out []string
	if len(c.Products) > 0 {
		quoted := make([]string, len(c.Products))
		for i, p := range c.Products {
			quoted[i] = celString(GFDProductName(p))
		}
		out = append(out, draAttr(nvdra.AttrProductName)+".replace(' ', '-') in ["+strings.Join(quoted, ", ")+"]")
	}
	if c.MIGProfile != "" {
		out = append(out, draAttr(nvdra.AttrProfile)+" == "+celString(c.MIGProfile))
	}
	if c.MinMemoryGiB > 0 {
		out = append(out, fmt.Sprintf("device.capacity['%s'].%s.compareTo(quantity('%dGi')) >= 0", nvdra.DriverName, nvdra.CapacityMemory, c.MinMemoryGiB))
	}
	if cc := c.MinCompute; cc != nil {
		out = append(out, fmt.Sprintf("%s.compareTo(semver('%d.%d.0')) >= 0", draAttr(nvdra.AttrCUDAComputeCapability), cc.Major, cc.Minor))
	}
	if minCUDA != nil {
		out = append(out, fmt.Sprintf("%s.compareTo(semver('%d.%d.0')) >= 0", draAttr(nvdra.AttrCUDADriverVersion), minCUDA.Major, minCUDA.Minor))
	}
	return out
}

// DeviceClass is the NVIDIA DeviceClass a choice's devices are of.
func (c GPUChoice) DeviceClass() string {
	if c.MIGProfile != "" {
		return nvdra.DeviceClassMIG
	}
	return nvdra.DeviceClassGPU
}

// GFDProductName is a product name as GPU Feature Discovery labels it:
// its spaces turned into dashes ("NVIDIA H100 80GB HBM3" becomes
// "NVIDIA-H100-80GB-HBM3"); a name spelled that way already is kept.
func GFDProductName(name string) string { return strings.Join(strings.Fields(name), "-") }

// celString quotes s as a CEL string literal.
func celString(s string) string { return strconv.Quote(s) }

// draRequest is the one device request of a DRA workload's claim: its
// only choice exactly, or its choices as firstAvailable subrequests.
func (g WorkloadGPU) draRequest() resourcev1.DeviceRequest {
	choices := g.Choices()
	selectors := func(c GPUChoice) []resourcev1.DeviceSelector {
		var out []resourcev1.DeviceSelector
		for _, expr := range DRASelectors(c, g.MinCUDA) {
			out = append(out, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}})
		}
		return out
	}
	req := resourcev1.DeviceRequest{Name: DRAClaimName}
	if len(choices) == 1 {
		c := choices[0]
		req.Exactly = &resourcev1.ExactDeviceRequest{
			DeviceClassName: c.DeviceClass(),
			Selectors:       selectors(c),
			AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
			Count:           c.Count,
		}
		return req
	}
	for i, c := range choices {
		req.FirstAvailable = append(req.FirstAvailable, resourcev1.DeviceSubRequest{
			Name:            draChoiceName(i),
			DeviceClassName: c.DeviceClass(),
			Selectors:       selectors(c),
			AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
			Count:           c.Count,
		})
	}
	return req
}

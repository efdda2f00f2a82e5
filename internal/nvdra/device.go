package nvdra

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// GPU is one physical GPU as the gpu-kubelet-plugin reads it through NVML
// (cmd/gpu-kubelet-plugin/nvlib.go, getGpuInfo): the facts its ResourceSlice
// device is built from.
type GPU struct {
	Minor                 int    // device minor number: the N of /dev/nvidiaN and of the name gpu-N
	UUID                  string // "GPU-…"
	ProductName           string // NVML's name: "NVIDIA H100 80GB HBM3"
	Brand                 string // go-nvlib's GetBrandAsString: "Nvidia"
	Architecture          string // go-nvlib's GetArchitectureAsString: "Hopper"
	CUDAComputeCapability string // "major.minor": "9.0"
	MemoryBytes           int64  // NVML's total memory
	DriverVersion         string // "550.54.15"
	CUDADriverVersion     string // "major.minor" of the CUDA version the driver supports: "12.4"
	PCIeBusID             string // go-nvlib's GetPCIBusID: "0000:53:00.0"
	PCIeRoot              string // "pci0000:50"; "" when the plugin cannot resolve it (it then omits AttrPCIeRoot)
}

// Name is the device's name in the ResourceSlice (GpuInfo.CanonicalName).
func (g GPU) Name() string { return fmt.Sprintf("gpu-%d", g.Minor) }

// Device is the ResourceSlice device the plugin publishes for a GPU
// without MIG mode (GpuInfo.GetDevice).
func (g GPU) Device() (resourceapi.Device, error) {
	attrs, err := g.commonAttributes(DeviceTypeGPU, g.UUID)
	if err != nil {
		return resourceapi.Device{}, fmt.Errorf("building device %s: %w", g.Name(), err)
	}
	return resourceapi.Device{
		Name:       g.Name(),
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			CapacityMemory: {Value: *resource.NewQuantity(g.MemoryBytes, resource.BinarySI)},
		},
	}, nil
}

// commonAttributes are the attributes a GPU and its MIG devices share; the
// MIG devices carry their parent's product, versions and PCIe facts.
func (g GPU) commonAttributes(deviceType, uuid string) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, error) {
	cc, err := semverString(g.CUDAComputeCapability)
	if err != nil {
		return nil, fmt.Errorf("CUDA compute capability: %w", err)
	}
	driver, err := semverString(g.DriverVersion)
	if err != nil {
		return nil, fmt.Errorf("driver version: %w", err)
	}
	cuda, err := semverString(g.CUDADriverVersion)
	if err != nil {
		return nil, fmt.Errorf("CUDA driver version: %w", err)
	}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		AttrType:                  str(deviceType),
		AttrUUID:                  str(uuid),
		AttrProductName:           str(g.ProductName),
		AttrBrand:                 str(g.Brand),
		AttrArchitecture:          str(g.Architecture),
		AttrCUDAComputeCapability: {VersionValue: &cc},
		AttrDriverVersion:         {VersionValue: &driver},
		AttrCUDADriverVersion:     {VersionValue: &cuda},
		AttrPCIeBusID:             str(g.PCIeBusID),
	}
	if g.PCIeRoot != "" {
		attrs[AttrPCIeRoot] = str(g.PCIeRoot)
	}
	return attrs, nil
}

// MIGDevice is one MIG device that exists on a GPU in MIG mode: a GPU
// instance of Profile at PlacementStart, with one compute instance
// spanning it (the plugin lists only such devices: MIG devices are created
// beforehand, by mig-parted or nvidia-smi, never by v25.8's plugin).
type MIGDevice struct {
	Parent         GPU
	UUID           string // "MIG-…"
	Profile        MIGProfile
	PlacementStart int // first memory slice of its placement
}

// Name is the device's name in the ResourceSlice (MigDeviceInfo.CanonicalName
// at v25.8.1): gpu-<parent minor>-mig-<GPU instance profile ID>-<placement
// start>-<placement size>, e.g. gpu-0-mig-19-3-1.
func (m MIGDevice) Name() string {
	return fmt.Sprintf("gpu-%d-mig-%d-%d-%d", m.Parent.Minor, m.Profile.ID, m.PlacementStart, m.Profile.Slices)
}

// Device is the ResourceSlice device the plugin publishes for a MIG device
// (MigDeviceInfo.GetDevice): the parent's attributes with type "mig", its
// own UUID, the parent's as parentUUID and the profile name; the GPU
// instance profile's memory and engines as capacities, and one
// memorySlice<N> capacity per memory slice it occupies.
func (m MIGDevice) Device() (resourceapi.Device, error) {
	attrs, err := m.Parent.commonAttributes(DeviceTypeMIG, m.UUID)
	if err != nil {
		return resourceapi.Device{}, fmt.Errorf("building device %s: %w", m.Name(), err)
	}
	attrs[AttrParentUUID] = str(m.Parent.UUID)
	attrs[AttrProfile] = str(m.Profile.Name)
	p := m.Profile
	count := func(n int) resourceapi.DeviceCapacity {
		return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(n), resource.BinarySI)}
	}
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		CapacityMultiprocessors: count(p.Multiprocessors),
		CapacityCopyEngines:     count(p.CopyEngines),
		CapacityDecoders:        count(p.Decoders),
		CapacityEncoders:        count(p.Encoders),
		CapacityJPEGEngines:     count(p.JPEGEngines),
		CapacityOFAEngines:      count(p.OFAEngines),
		CapacityMemory:          {Value: *resource.NewQuantity(p.MemoryMiB<<20, resource.BinarySI)},
	}
	for i := m.PlacementStart; i < m.PlacementStart+p.Slices; i++ {
		capacity[resourceapi.QualifiedName(CapacityMemorySlicePrefix+strconv.Itoa(i))] = count(1)
	}
	return resourceapi.Device{Name: m.Name(), Attributes: attrs, Capacity: capacity}, nil
}

// semverString normalizes a version as the plugin does with
// Masterminds/semver (v1) MustParse(v).String(): up to three dot-separated
// numbers, missing ones 0, leading zeros dropped ("12.4" -> "12.4.0",
// "580.95.05" -> "580.95.5"). Where the plugin would panic, it errs.
func semverString(v string) (string, error) {
	parts := strings.Split(v, ".")
	if v == "" || len(parts) > 3 {
		return "", fmt.Errorf("%q is not a version of up to three numbers", v)
	}
	nums := [3]uint64{}
	for i, part := range parts {
		n, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not a version of up to three numbers", v)
		}
		nums[i] = n
	}
	return fmt.Sprintf("%d.%d.%d", nums[0], nums[1], nums[2]), nil
}

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

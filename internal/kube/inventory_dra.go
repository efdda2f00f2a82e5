package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// The inventory's DRA half: the devices NVIDIA's DRA driver publishes in
// ResourceSlices, and which of them ResourceClaims hold, read as the
// scheduler reads them (only a pool's newest generation counts; a device is
// allocated when a claim's status.allocation names its driver, pool and
// device, except for admin access, which takes nothing).

// The ways a node offers its GPUs (GPUNode.GPUPath).
const (
	// GPUPathDevicePlugin: nvidia.com/gpu capacity, no DRA devices.
	GPUPathDevicePlugin = "device_plugin"
	// GPUPathDRA: devices of NVIDIA's DRA driver, no nvidia.com/gpu capacity.
	GPUPathDRA = "dra"
	// GPUPathBoth: both at once, the same GPUs offered twice; they are
	// counted once (the DRA devices), and what either path hands out is
	// allocated.
	GPUPathBoth = "both"
	// GPUPathNone: GPU labels, but neither path has registered a GPU yet.
	GPUPathNone = "none"
)

// DeviceCounts counts DRA devices of NVIDIA's driver.
type DeviceCounts struct {
	// Published are in the newest generation of their pool's ResourceSlices.
	Published int64
	// Allocated are in some ResourceClaim's allocation (admin access aside).
	Allocated int64
	// Unhealthy are of GPUs the node's health agent reports unhealthy
	// (allocated or not).
	Unhealthy int64
	// Free is Published - Allocated, less the unhealthy devices that are
	// not allocated.
	Free int64
}

func (c *DeviceCounts) count(allocated, unhealthy bool) {
	c.Published++
	if allocated {
		c.Allocated++
	}
	if unhealthy {
		c.Unhealthy++
	}
	if !allocated && !unhealthy {
		c.Free++
	}
}

func (c *DeviceCounts) add(o DeviceCounts) {
	c.Published += o.Published
	c.Allocated += o.Allocated
	c.Unhealthy += o.Unhealthy
	c.Free += o.Free
}

// draDevice is one published device, with what the inventory reads from it.
type draDevice struct {
	mig               bool
	profile           string // MIG devices: "1g.10gb"
	product           string // as GFD names it: "NVIDIA-H100-80GB-HBM3"
	memoryMiB         int64
	computeCapability string // "9.0"
	driverVersion     string
	cudaVersion       string // "12.8"
	uuid              string // "GPU-…" or "MIG-…"
	parentUUID        string // MIG devices: their GPU's
	pciBusID          string // "0000:9a:00.0"
	allocated         bool
}

type draDeviceID struct{ pool, device string }

// draDevices is what the ResourceSlices and ResourceClaims say.
type draDevices struct {
	// served is false when the API server does not serve resource.k8s.io/v1.
	served bool
	// unavailable, when set, says why the credentials could not read them;
	// byID and byNode are then empty.
	unavailable string
	byID        map[draDeviceID]*draDevice
	byNode      map[string][]*draDevice
}

// forbid records that the credentials may not list what; no device counts.
func (d *draDevices) forbid(what string, err error) {
	d.unavailable = "the credentials in use may not list " + what + " (grant list on resourceslices and resourceclaims " +
		"of resource.k8s.io to count DRA devices): " + err.Error()
	d.byID, d.byNode = nil, nil
}

// listDRADevices reads the driver's ResourceSlices (field selector
// spec.driver, paginated) and keeps the devices of each pool's newest
// generation, as the scheduler does while a driver rewrites its pool. A
// cluster that does not serve resource.k8s.io/v1 answers 404: that is
// served = false, not an error.
func listDRADevices(ctx context.Context, client kubernetes.Interface, pageSize int64) (draDevices, error) {
	type sliceDevices struct {
		pool, node string
		generation int64
		devices    []resourcev1.Device
	}
	var slices []sliceDevices
	newest := map[string]int64{}
	err := listPages(ctx, pageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		lo.FieldSelector = "spec.driver=" + nvdra.DriverName
		list, err := client.ResourceV1().ResourceSlices().List(ctx, lo)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			s := &list.Items[i].Spec
			if s.NodeName == nil || *s.NodeName == "" {
				continue // the driver publishes per node; a slice for many nodes is not one node's GPUs
			}
			slices = append(slices, sliceDevices{pool: s.Pool.Name, node: *s.NodeName, generation: s.Pool.Generation, devices: s.Devices})
			newest[s.Pool.Name] = max(newest[s.Pool.Name], s.Pool.Generation)
		}
		return list.Continue, nil
	})
	if apierrors.IsNotFound(err) {
		return draDevices{}, nil
	}
	if apierrors.IsForbidden(err) {
		out := draDevices{served: true}
		out.forbid("ResourceSlices", err)
		return out, nil
	}
	if err != nil {
		return draDevices{}, fmt.Errorf("listing ResourceSlices of driver %s: %w", nvdra.DriverName, err)
	}
	out := draDevices{served: true, byID: map[draDeviceID]*draDevice{}, byNode: map[string][]*draDevice{}}
	for _, s := range slices {
		if s.generation != newest[s.pool] {
			continue
		}
		for i := range s.devices {
			d := draDeviceFrom(&s.devices[i])
			out.byID[draDeviceID{s.pool, s.devices[i].Name}] = d
			out.byNode[s.node] = append(out.byNode[s.node], d)
		}
	}
	return out, nil
}

// markAllocated reads every ResourceClaim (paginated) and marks the devices
// their allocations hold. Credentials that may not list claims make every
// device uncounted (forbid), not an error.
func (d *draDevices) markAllocated(ctx context.Context, client kubernetes.Interface, pageSize int64) error {
	err := listPages(ctx, pageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		list, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, lo)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			alloc := list.Items[i].Status.Allocation
			if alloc == nil {
				continue
			}
			for _, r := range alloc.Devices.Results {
				if r.Driver != nvdra.DriverName || (r.AdminAccess != nil && *r.AdminAccess) {
					continue
				}
				if dev := d.byID[draDeviceID{r.Pool, r.Device}]; dev != nil {
					dev.allocated = true
				}
			}
		}
		return list.Continue, nil
	})
	if apierrors.IsForbidden(err) {
		d.forbid("ResourceClaims", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	return nil
}

// draDeviceFrom reads the attributes NVIDIA's driver publishes
// (internal/nvdra).
func draDeviceFrom(dev *resourcev1.Device) *draDevice {
	attr := func(name string) resourcev1.DeviceAttribute {
		if a, ok := dev.Attributes[resourcev1.QualifiedName(name)]; ok {
			return a
		}
		return dev.Attributes[resourcev1.QualifiedName(nvdra.DriverName+"/"+name)]
	}
	str := func(name string) string {
		if a := attr(name); a.StringValue != nil {
			return *a.StringValue
		}
		return ""
	}
	version := func(name string) string {
		if a := attr(name); a.VersionValue != nil {
			return *a.VersionValue
		}
		return ""
	}
	d := &draDevice{
		mig:               str(nvdra.AttrType) == nvdra.DeviceTypeMIG,
		profile:           str(nvdra.AttrProfile),
		product:           gpulabels.ProductLabel(str(nvdra.AttrProductName)),
		computeCapability: majorMinor(version(nvdra.AttrCUDAComputeCapability)),
		driverVersion:     version(nvdra.AttrDriverVersion),
		cudaVersion:       majorMinor(version(nvdra.AttrCUDADriverVersion)),
		uuid:              str(nvdra.AttrUUID),
		parentUUID:        str(nvdra.AttrParentUUID),
		pciBusID:          str(nvdra.AttrPCIeBusID),
	}
	if c, ok := dev.Capacity[resourcev1.QualifiedName(nvdra.CapacityMemory)]; ok {
		d.memoryMiB = c.Value.Value() / (1 << 20)
	}
	return d
}

// majorMinor cuts a semantic version to "major.minor" ("9.0.0" → "9.0"), the
// form GFD's labels give.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// podGPUsThroughDRA says whether the scheduler handed the pod's
// nvidia.com/gpu request to DRA (DeviceClass extendedResourceName): its
// ResourceClaim then holds the GPUs, and counting the request too would count
// them twice.
func podGPUsThroughDRA(pod *corev1.Pod) bool {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return false
	}
	for _, m := range st.RequestMappings {
		if m.ResourceName == string(ResourceGPU) {
			return true
		}
	}
	return false
}

// settleGPUPath counts the node's DRA devices into it and decides, from
// what each path offers, which the node uses and what its GPU counts are.
// dpAllocated is what its pods request through the device plugin. Free
// follows the health rule of inventory_health.go.
func (n *GPUNode) settleGPUPath(devices []*draDevice, dpAllocated int64) {
	var gpus DeviceCounts
	unhealthy, unmatched := unhealthyDevices(n.Health, devices)
	for _, d := range devices {
		n.DRA.count(d.allocated, unhealthy[d])
		if d.mig {
			if n.MIG == nil {
				n.MIG = map[string]DeviceCounts{}
			}
			c := n.MIG[d.profile]
			c.count(d.allocated, unhealthy[d])
			n.MIG[d.profile] = c
			continue
		}
		gpus.count(d.allocated, unhealthy[d])
		n.fillFromDevice(d)
	}
	for _, d := range devices {
		n.fillFromDevice(d) // a node of MIG devices only still has a product
	}
	switch {
	case len(devices) == 0 && n.Count == 0:
		n.GPUPath = GPUPathNone
		n.Allocated = dpAllocated
		n.Free = n.devicePluginFree(n.gpuLabels)
	case len(devices) == 0:
		n.GPUPath = GPUPathDevicePlugin
		n.Allocated = dpAllocated
		n.Free = n.devicePluginFree(n.gpuLabels)
	case n.Count == 0:
		n.GPUPath = GPUPathDRA
		n.Count, n.Allocatable, n.Allocated = gpus.Published, gpus.Published, gpus.Allocated
		n.Free = max(gpus.Free-unmatched, 0)
	default:
		n.GPUPath = GPUPathBoth
		n.Count, n.Allocatable, n.Allocated = gpus.Published, gpus.Published, gpus.Allocated+dpAllocated
		n.Free = max(gpus.Free-dpAllocated-unmatched, 0)
	}
	if faultWithoutGPU(n.Health) {
		n.noneFree()
	}
}

// noneFree makes none of the node's GPUs and devices free: its condition
// is False and names no GPU.
func (n *GPUNode) noneFree() {
	n.Free, n.DRA.Free = 0, 0
	for profile, c := range n.MIG {
		c.Free = 0
		n.MIG[profile] = c
	}
}

// fillFromDevice sets the GPU facts GFD's labels did not give.
func (n *GPUNode) fillFromDevice(d *draDevice) {
	if n.Product == "" {
		n.Product = d.product
	}
	if n.MemoryMiB == 0 && !d.mig {
		n.MemoryMiB = d.memoryMiB
	}
	if n.ComputeCapability == "" {
		n.ComputeCapability = d.computeCapability
	}
	if n.DriverVersion == "" {
		n.DriverVersion = d.driverVersion
	}
	if n.CUDAVersion == "" {
		n.CUDAVersion = d.cudaVersion
	}
}

// draNotServed says why a cluster that answered 404 for ResourceSlices has
// no DRA: RequireDRA's error, which names the cluster's version and what
// DRA needs (a discovery request or two, only on such a cluster).
func (c *Cluster) draNotServed(ctx context.Context) string {
	err := c.RequireDRA(ctx)
	var unavailable *DRAUnavailableError
	if errors.As(err, &unavailable) {
		return unavailable.Error()
	}
	reason := "the API server answered 404 for " + draGroupVersion + " resourceslices"
	if err != nil {
		reason += " (" + err.Error() + ")"
	}
	return reason
}

package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// This file reads the devices NVIDIA's DRA driver publishes and tells
// which of them a GPU choice's claim would accept, evaluating the same
// CEL the claim carries (the DeviceClass's selectors and the choice's)
// with Kubernetes' own evaluator (k8s.io/dynamic-resource-allocation/cel),
// so the plan check and the diagnosis agree with the scheduler's
// allocator on what matches. Which of the matching devices the allocator
// would pick, partitionable devices' shared counters, and admin access are
// not modeled: a device matches or not, and is allocated or not.

// DRADevice is one device the NVIDIA driver publishes on a node.
type DRADevice struct {
	Node   string
	Pool   string
	Device resourcev1.Device
	// AllocatedTo names the claim holding the device and the pods it is
	// reserved for, e.g. "claim ml/train-0-gpu-x2k (pod ml/train-0)"; ""
	// when it is free or allocations were not read.
	AllocatedTo string
}

// DRAFacts are the NVIDIA devices of a cluster and its NVIDIA
// DeviceClasses (nil when a class does not exist).
type DRAFacts struct {
	Devices []DRADevice // sorted by node, then device name
	Classes map[string]*resourcev1.DeviceClass
}

// ReadDRAFacts reads the NVIDIA driver's ResourceSlices (a paginated LIST
// filtered by driver) and its DeviceClasses; with allocations, also every
// ResourceClaim, to say which devices are allocated and to whom.
func (c *Cluster) ReadDRAFacts(ctx context.Context, allocations bool) (DRAFacts, error) {
	facts := DRAFacts{Classes: map[string]*resourcev1.DeviceClass{}}
	for _, name := range []string{nvdra.DeviceClassGPU, nvdra.DeviceClassMIG} {
		class, err := c.client.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			facts.Classes[name] = nil
		case err != nil:
			return facts, fmt.Errorf("reading DeviceClass %s: %w", name, err)
		default:
			facts.Classes[name] = class
		}
	}
	err := listPages(ctx, DefaultPageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		lo.FieldSelector = fields.OneTermEqualSelector("spec.driver", nvdra.DriverName).String()
		list, err := c.client.ResourceV1().ResourceSlices().List(ctx, lo)
		if err != nil {
			return "", fmt.Errorf("listing ResourceSlices of %s: %w", nvdra.DriverName, err)
		}
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				node := ""
				switch {
				case d.NodeName != nil:
					node = *d.NodeName
				case s.Spec.NodeName != nil:
					node = *s.Spec.NodeName
				}
				facts.Devices = append(facts.Devices, DRADevice{Node: node, Pool: s.Spec.Pool.Name, Device: d})
			}
		}
		return list.Continue, nil
	})
	if err != nil {
		return facts, err
	}
	sort.SliceStable(facts.Devices, func(i, j int) bool {
		a, b := facts.Devices[i], facts.Devices[j]
		return a.Node < b.Node || (a.Node == b.Node && a.Device.Name < b.Device.Name)
	})
	if !allocations {
		return facts, nil
	}
	claims, err := c.client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return facts, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	index := map[[2]string]int{}
	for i, d := range facts.Devices {
		index[[2]string{d.Pool, d.Device.Name}] = i
	}
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		holder := "claim " + claim.Namespace + "/" + claim.Name
		var pods []string
		for _, r := range claim.Status.ReservedFor {
			if r.Resource == "pods" {
				pods = append(pods, claim.Namespace+"/"+r.Name)
			}
		}
		if len(pods) > 0 {
			holder += " (pod " + strings.Join(pods, ", ") + ")"
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if i, ok := index[[2]string{r.Pool, r.Device}]; ok && r.Driver == nvdra.DriverName {
				facts.Devices[i].AllocatedTo = holder
			}
		}
	}
	return facts, nil
}

// MissingDeviceClassError is a DRA request whose NVIDIA DeviceClass the
// cluster does not have: NVIDIA's DRA driver is not deployed (yet).
type MissingDeviceClassError struct{ Name string }

func (e *MissingDeviceClassError) Error() string {
	return fmt.Sprintf("the cluster has no DeviceClass %s: NVIDIA's DRA driver (%s) is not deployed", e.Name, nvdra.DriverName)
}

// choiceMatcher tells whether a device would serve one GPU choice: it is
// of the choice's DeviceClass and meets each of the choice's selectors.
type choiceMatcher struct {
	choice    GPUChoice
	class     []dracel.CompilationResult
	exprs     []string                   // DRASelectors of the choice
	selectors []dracel.CompilationResult // exprs compiled, in order
}

// newChoiceMatcher compiles what choice c asks with minCUDA. The choice's
// DeviceClass must exist in facts: a missing one is an error that says to
// deploy the driver.
func newChoiceMatcher(facts DRAFacts, c GPUChoice, minCUDA *CUDAVersion) (*choiceMatcher, error) {
	class := facts.Classes[c.DeviceClass()]
	if class == nil {
		return nil, &MissingDeviceClassError{Name: c.DeviceClass()}
	}
	m := &choiceMatcher{choice: c}
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true})
	compile := func(expr string) (dracel.CompilationResult, error) {
		r := compiler.CompileCELExpression(expr, dracel.Options{})
		if r.Error != nil {
			return r, fmt.Errorf("compiling CEL %q: %w", expr, r.Error)
		}
		return r, nil
	}
	for _, s := range class.Spec.Selectors {
		if s.CEL == nil {
			continue
		}
		r, err := compile(s.CEL.Expression)
		if err != nil {
			return nil, fmt.Errorf("DeviceClass %s: %w", class.Name, err)
		}
		m.class = append(m.class, r)
	}
	m.exprs = DRASelectors(c, minCUDA)
	for _, expr := range m.exprs {
		r, err := compile(expr)
		if err != nil {
			return nil, err
		}
		m.selectors = append(m.selectors, r)
	}
	return m, nil
}

// failing is the index of the first selector of the choice that d does
// not meet, -1 when it meets them all, or len(selectors) when it is not
// of the choice's DeviceClass. A CEL runtime error (an attribute the
// device lacks) counts as not meeting, as it does for the allocator.
func (m *choiceMatcher) failing(ctx context.Context, d *DRADevice) int {
	input := dracel.Device{Driver: nvdra.DriverName, Attributes: d.Device.Attributes, Capacity: d.Device.Capacity}
	for _, r := range m.class {
		if ok, _, err := r.DeviceMatches(ctx, input); err != nil || !ok {
			return len(m.selectors)
		}
	}
	for i, r := range m.selectors {
		if ok, _, err := r.DeviceMatches(ctx, input); err != nil || !ok {
			return i
		}
	}
	return -1
}

// nodeDevices groups facts' devices by node, in node order.
func (f DRAFacts) nodeDevices() (nodes []string, byNode map[string][]*DRADevice) {
	byNode = map[string][]*DRADevice{}
	for i := range f.Devices {
		d := &f.Devices[i]
		if _, ok := byNode[d.Node]; !ok {
			nodes = append(nodes, d.Node)
		}
		byNode[d.Node] = append(byNode[d.Node], d)
	}
	return nodes, byNode
}

// describeDevices says what devices a node has, e.g. "8× NVIDIA
// A100-SXM4-40GB (40Gi, compute 8.0, CUDA 12.4)", kinds in the order met.
func describeDevices(devices []*DRADevice) string {
	var kinds []string
	count := map[string]int{}
	for _, d := range devices {
		k := deviceKind(&d.Device)
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d× %s", count[k], k)
	}
	return strings.Join(parts, ", ")
}

// deviceKind is what tells one device from another for a reader: product,
// MIG profile, memory, compute capability and CUDA version.
func deviceKind(d *resourcev1.Device) string {
	attr := func(name string) string {
		a, ok := d.Attributes[resourcev1.QualifiedName(name)]
		switch {
		case !ok:
			return ""
		case a.StringValue != nil:
			return *a.StringValue
		case a.VersionValue != nil:
			return strings.TrimSuffix(*a.VersionValue, ".0")
		}
		return ""
	}
	name := attr(nvdra.AttrProductName)
	if name == "" {
		name = "device"
	}
	if p := attr(nvdra.AttrProfile); p != "" {
		name += " MIG " + p
	}
	var props []string
	if m, ok := d.Capacity[resourcev1.QualifiedName(nvdra.CapacityMemory)]; ok {
		props = append(props, m.Value.String())
	}
	if cc := attr(nvdra.AttrCUDAComputeCapability); cc != "" {
		props = append(props, "compute "+cc)
	}
	if v := attr(nvdra.AttrCUDADriverVersion); v != "" {
		props = append(props, "CUDA "+v)
	}
	if len(props) == 0 {
		return name
	}
	return name + " (" + strings.Join(props, ", ") + ")"
}

// describeChoice says what a choice asks for, e.g. "2 devices of
// NVIDIA-A100-SXM4-80GB with ≥ 79 GiB".
func describeChoice(c GPUChoice, minCUDA *CUDAVersion) string {
	noun := "GPUs"
	if c.Count == 1 {
		noun = "GPU"
	}
	if c.MIGProfile != "" {
		noun = "MIG devices " + c.MIGProfile
		if c.Count == 1 {
			noun = "MIG device " + c.MIGProfile
		}
	}
	s := fmt.Sprintf("%d %s", c.Count, noun)
	var criteria []string
	if len(c.Products) > 0 {
		criteria = append(criteria, "of "+strings.Join(c.Products, " or "))
	}
	if c.MinMemoryGiB > 0 {
		criteria = append(criteria, fmt.Sprintf("with ≥ %d GiB", c.MinMemoryGiB))
	}
	if c.MinCompute != nil {
		criteria = append(criteria, "compute capability ≥ "+c.MinCompute.String())
	}
	if minCUDA != nil {
		criteria = append(criteria, "CUDA ≥ "+minCUDA.String())
	}
	if len(criteria) > 0 {
		s += " " + strings.Join(criteria, ", ")
	}
	return s
}

// constraint names selector i of the choice, for "no device meets ...":
// the CEL itself, which the user finds in the claim, or the DeviceClass.
func (m *choiceMatcher) constraint(i int) string {
	if i >= len(m.exprs) {
		return "DeviceClass " + m.choice.DeviceClass()
	}
	return m.exprs[i]
}

package k8s

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// kwok takes over the nodes that carry this annotation; the cluster starts
// kwok with --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake.
const (
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
)

// maxPodsPerNode is the kubelet's default --max-pods.
const maxPodsPerNode = 110

// NodeSpec is one simulated node to register.
type NodeSpec struct {
	Name         string
	InstanceType ec2catalog.InstanceType
	ExtraLabels  map[string]string // added last, so they may override the instance type's labels

	// WithoutGPUCapacity registers a GPU node without nvidia.com/gpu in its
	// capacity and allocatable, as a node looks before the NVIDIA device
	// plugin runs on it. Its labels and taint are those of a GPU node.
	WithoutGPUCapacity bool

	// GFDLabeled registers a GPU node with the labels GPU Feature Discovery
	// and Node Feature Discovery wrote on it already (nvidia.com/gpu.* for
	// its instance type's GPUs, NFD's
	// feature.node.kubernetes.io/pci-10de.present and the GPU Operator's
	// nvidia.com/gpu.present): a node of a cluster where GFD and NFD run
	// outside the test, for tests whose subject is what comes after the
	// labels. Without it a GPU node has what a kubelet registers (an EKS
	// node: its instance type, no GPU label), and GFD's labels come only
	// from GFD and NFD running on it (see node_feature_simulator.go).
	GFDLabeled bool

	// Resources are added to the node's capacity and allocatable last, so
	// they may override the instance type's: e.g. nvidia.com/mig-1g.10gb
	// under the mixed MIG strategy, or nvidia.com/gpu.shared.
	Resources corev1.ResourceList

	// Taints, with OverrideTaints, replace the nvidia.com/gpu taint a GPU
	// node otherwise gets: an EKS node carries its node group's taints
	// and no other (none at all when Taints is empty).
	Taints         []corev1.Taint
	OverrideTaints bool

	// DRA makes a GPU node one whose GPUs NVIDIA's DRA driver hands out
	// instead of the device plugin: it registers without nvidia.com/gpu
	// capacity (as WithoutGPUCapacity) and with DRANodeLabel, for the
	// driver's DaemonSet to select. While the driver's kubelet-plugin pod
	// runs on it, the DRA simulator publishes its GPUs as ResourceSlices.
	DRA bool

	// MIGDevices puts every GPU of a DRA node in MIG mode with these MIG
	// devices on it (profile names, e.g. seven "1g.10gb" on an H100 or
	// "3g.20gb" twice on an A100 40GB), as mig-parted would have created
	// them: the DRA simulator then publishes the MIG devices and not the
	// GPUs. Recorded on the node as MIGDevicesAnnotation.
	MIGDevices []string
}

// nodeObject is the Node the cluster creates for spec: the labels a
// kubelet registers (and GFD's when GFDLabeled), the nvidia.com/gpu taint
// and capacity, and the status a kubelet would register with. kwok then
// marks it Ready.
func nodeObject(spec NodeSpec) (*corev1.Node, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("node spec has no name")
	}
	p := spec.InstanceType
	if p.Name == "" {
		return nil, fmt.Errorf("node %s has no instance type", spec.Name)
	}
	arch, err := kubernetesArch(p.Architecture)
	if err != nil {
		return nil, fmt.Errorf("node %s: instance type %s: %w", spec.Name, p.Name, err)
	}
	if err := checkDRASpec(spec); err != nil {
		return nil, err
	}
	labels := map[string]string{
		corev1.LabelArchStable: arch,
		corev1.LabelOSStable:   "linux",
		corev1.LabelHostname:   spec.Name,
		// A kubelet still sets the beta twins of arch and os; without them
		// the node lifecycle controller patches every new node to add them.
		"beta.kubernetes.io/arch":      arch,
		"beta.kubernetes.io/os":        "linux",
		corev1.LabelInstanceTypeStable: p.Name,
		"type":                         "kwok",
	}
	var taints []corev1.Taint
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(p.CPU),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(p.MemoryGi)<<30, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPodsPerNode, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	if p.HasGPU() {
		if spec.GFDLabeled {
			maps.Copy(labels, gpuFeatureDiscoveryLabels(p))
			labels[gpulabels.Present] = "true"
			labels[gpulabels.NFDPCIPresent] = "true"
		}
		taints = append(taints, corev1.Taint{Key: gpulabels.TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		if !spec.WithoutGPUCapacity {
			capacity[gpulabels.ResourceName] = *resource.NewQuantity(int64(p.GPUCount), resource.DecimalSI)
		}
	}
	if spec.OverrideTaints {
		taints = slices.Clone(spec.Taints)
	}
	annotations := map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue}
	if spec.DRA {
		labels[DRANodeLabel] = "true"
		delete(capacity, gpulabels.ResourceName) // the DRA driver, not a device plugin, hands out its GPUs
	}
	if len(spec.MIGDevices) > 0 {
		annotations[MIGDevicesAnnotation] = strings.Join(spec.MIGDevices, ",")
	}
	maps.Copy(labels, spec.ExtraLabels)
	maps.Copy(capacity, spec.Resources)

	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        spec.Name,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				// Loopback: if anything ever dials a "kubelet", it stays on this machine.
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: spec.Name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:            arch,
				OperatingSystem:         "linux",
				OSImage:                 "Amazon Linux 2023",
				KubeletVersion:          testbed.KubernetesVersion,
				ContainerRuntimeVersion: "containerd://1.7.22",
			},
		},
	}, nil
}

// kubernetesArch is the GOARCH name a kubelet reports for an EC2
// architecture.
func kubernetesArch(ec2Architecture string) (string, error) {
	switch ec2Architecture {
	case ec2catalog.ArchitectureX86_64:
		return "amd64", nil
	case ec2catalog.ArchitectureARM64:
		return "arm64", nil
	}
	return "", fmt.Errorf("unknown architecture %q", ec2Architecture)
}

// gpuFeatureDiscoveryLabels are the labels GFD writes for a node with full
// (non-MIG) GPUs, MIG strategy "none" and no sharing configured.
func gpuFeatureDiscoveryLabels(p ec2catalog.InstanceType) map[string]string {
	driverMajor, driverMinor, driverRev := splitVersion3(p.DriverVersion)
	cudaMajor, cudaMinor, _ := splitVersion3(p.CUDAVersion)
	return map[string]string{
		gpulabels.Product:         p.GPUProduct,
		gpulabels.Count:           strconv.Itoa(p.GPUCount),
		gpulabels.Memory:          strconv.Itoa(p.GPUMemoryMiB),
		gpulabels.Family:          p.Family,
		gpulabels.ComputeMajor:    strconv.Itoa(p.ComputeMajor),
		gpulabels.ComputeMinor:    strconv.Itoa(p.ComputeMinor),
		gpulabels.Replicas:        "1",
		gpulabels.SharingStrategy: "none",
		gpulabels.Machine:         p.Name,
		gpulabels.Mode:            "compute",
		gpulabels.MIGCapable:      strconv.FormatBool(p.MIGCapable),
		gpulabels.MPSCapable:      "false",

		gpulabels.DriverVersionFull:     p.DriverVersion,
		gpulabels.DriverVersionMajor:    driverMajor,
		gpulabels.DriverVersionMinor:    driverMinor,
		gpulabels.DriverVersionRevision: driverRev,
		gpulabels.RuntimeVersionFull:    p.CUDAVersion,
		gpulabels.RuntimeVersionMajor:   cudaMajor,
		gpulabels.RuntimeVersionMinor:   cudaMinor,

		gpulabels.DeprecatedDriverMajor:  driverMajor,
		gpulabels.DeprecatedDriverMinor:  driverMinor,
		gpulabels.DeprecatedDriverRev:    driverRev,
		gpulabels.DeprecatedRuntimeMajor: cudaMajor,
		gpulabels.DeprecatedRuntimeMinor: cudaMinor,
	}
}

// splitVersion3 splits "550.54.15" into its parts; missing parts are "".
func splitVersion3(version string) (major, minor, rev string) {
	parts := append(strings.SplitN(version, ".", 3), "", "", "")
	return parts[0], parts[1], parts[2]
}

package k8s

import (
	"crypto/sha256"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// The marks a DRA node carries (NodeSpec.DRA, NodeSpec.MIGDevices). They
// are the testbed's own: on a real cluster a node group's label selects
// the driver's nodes, and the MIG layout is what mig-parted left in the
// GPUs, which the plugin reads through NVML.
const (
	DRANodeLabel         = "testbed.gpuinfra.io/dra"
	MIGDevicesAnnotation = "testbed.gpuinfra.io/mig-devices" // profile names, comma-separated
)

// checkDRASpec refuses DRA fields a node cannot have: DRA on a node
// without NVIDIA GPUs, MIG devices on a node that is not a DRA node (the
// device-plugin simulator models no MIG: use Resources there), and MIG
// devices its GPU does not have or cannot fit.
func checkDRASpec(spec NodeSpec) error {
	if !spec.DRA && len(spec.MIGDevices) == 0 {
		return nil
	}
	if !spec.InstanceType.HasGPU() {
		return fmt.Errorf("node %s: instance type %s has no NVIDIA GPUs for the DRA driver", spec.Name, spec.InstanceType.Name)
	}
	if !spec.DRA {
		return fmt.Errorf("node %s: MIGDevices are published by the DRA simulator only: set DRA too", spec.Name)
	}
	if _, err := draNodeGPUs(spec.Name, spec.InstanceType, spec.MIGDevices); err != nil {
		return fmt.Errorf("node %s: %w", spec.Name, err)
	}
	return nil
}

// draNodeDevices are the devices NVIDIA's gpu-kubelet-plugin publishes on
// node: one per GPU of its instance type, or, for GPUs in MIG mode (the
// node's MIGDevicesAnnotation), one per MIG device and none for the GPU
// (nvlib.go, enumerateGpusAndMigDevices). In minor order, MIG devices in
// the order of the annotation; the plugin itself appends them in Go map
// order, so no reader may depend on the order.
func draNodeDevices(node *corev1.Node) ([]resourceapi.Device, error) {
	typeName := node.Labels[corev1.LabelInstanceTypeStable]
	it, ok := ec2catalog.Lookup(typeName)
	if !ok {
		return nil, fmt.Errorf("unknown instance type %q", typeName)
	}
	var migDevices []string
	if a := node.Annotations[MIGDevicesAnnotation]; a != "" {
		for _, p := range strings.Split(a, ",") {
			migDevices = append(migDevices, strings.TrimSpace(p))
		}
	}
	gpus, err := draNodeGPUs(node.Name, it, migDevices)
	if err != nil {
		return nil, err
	}
	var devices []resourceapi.Device
	for _, g := range gpus {
		if len(g.mig) == 0 {
			d, err := g.gpu.Device()
			if err != nil {
				return nil, err
			}
			devices = append(devices, d)
			continue
		}
		for _, m := range g.mig {
			d, err := m.Device()
			if err != nil {
				return nil, err
			}
			devices = append(devices, d)
		}
	}
	return devices, nil
}

// draNodeGPU is one GPU of a DRA node and the MIG devices on it.
type draNodeGPU struct {
	gpu nvdra.GPU
	mig []nvdra.MIGDevice
}

// draNodeGPUs are the GPUs of a node of instance type it, with the
// identities NVML would report, synthesized so that the same node always
// gets the same ones: minor numbers 0..n-1, UUIDs hashed from the node's
// name, and PCIe bus IDs 0000:N1:00.0 behind roots pciN0, one per GPU (not
// the instance type's real topology).
func draNodeGPUs(nodeName string, it ec2catalog.InstanceType, migDevices []string) ([]draNodeGPU, error) {
	facts, err := nvdra.GPUOf(it)
	if err != nil {
		return nil, err
	}
	var placed []nvdra.MIGPlacement
	if len(migDevices) > 0 {
		if placed, err = nvdra.PlaceMIGDevices(facts.ProductName, migDevices); err != nil {
			return nil, err
		}
	}
	gpus := make([]draNodeGPU, it.GPUCount)
	for i := range gpus {
		g := facts
		g.Minor = i
		g.UUID = "GPU-" + hashedUUID(nodeName, "gpu", i)
		g.PCIeBusID = fmt.Sprintf("0000:%02x:00.0", 0x10*(i+1)+1)
		g.PCIeRoot = fmt.Sprintf("pci0000:%02x", 0x10*(i+1))
		gpus[i].gpu = g
		for _, p := range placed {
			gpus[i].mig = append(gpus[i].mig, nvdra.MIGDevice{
				Parent:         g,
				UUID:           "MIG-" + hashedUUID(nodeName, "mig", i, p.Profile.ID, p.Start),
				Profile:        p.Profile,
				PlacementStart: p.Start,
			})
		}
	}
	return gpus, nil
}

// hashedUUID formats a hash of parts as a UUID (8-4-4-4-12 hex digits).
func hashedUUID(parts ...any) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%q", parts)))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

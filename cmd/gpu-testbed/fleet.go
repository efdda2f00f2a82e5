package main

import (
	"fmt"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// defaultFleet is what `up` registers: a few nodes of each GPU instance
// type the demo talks about, and one CPU node.
var defaultFleet = []struct {
	instanceType string
	count        int
}{
	{"p5.48xlarge", 2},
	{"p4d.24xlarge", 2},
	{"g5.xlarge", 3},
	{"g4dn.xlarge", 2},
	{"m5.xlarge", 1},
}

// fleetNodes names nodes after their family: gpu-p5-0, gpu-g4dn-1, cpu-m5-0.
// GPU nodes start without nvidia.com/gpu capacity, as real ones do before
// NVIDIA's device plugin runs: deploying it (gpu_device_plugin) is what
// makes their GPUs allocatable.
func fleetNodes() ([]k8s.NodeSpec, error) {
	var specs []k8s.NodeSpec
	for _, group := range defaultFleet {
		instanceType, ok := ec2catalog.Lookup(group.instanceType)
		if !ok {
			return nil, fmt.Errorf("unknown instance type %s", group.instanceType)
		}
		kind := "gpu"
		if !instanceType.HasGPU() {
			kind = "cpu"
		}
		family, _, _ := strings.Cut(group.instanceType, ".")
		for i := range group.count {
			specs = append(specs, k8s.NodeSpec{Name: fmt.Sprintf("%s-%s-%d", kind, family, i), InstanceType: instanceType, WithoutGPUCapacity: instanceType.HasGPU()})
		}
	}
	return specs, nil
}

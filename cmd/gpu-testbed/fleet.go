package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// defaultFleet is what `up` registers: a few nodes of each GPU instance
// type the demo talks about, one CPU node, and DRA nodes beside the
// device-plugin ones: an H100 node, an A100 node, and an A100 node whose
// GPUs are in MIG mode with seven 1g.5gb devices each.
var defaultFleet = []fleetGroup{
	{instanceType: "p5.48xlarge", count: 2},
	{instanceType: "p4d.24xlarge", count: 2},
	{instanceType: "g5.xlarge", count: 3},
	{instanceType: "g4dn.xlarge", count: 2},
	{instanceType: "m5.xlarge", count: 1},
	{instanceType: "p5.48xlarge", count: 1, dra: true},
	{instanceType: "p4d.24xlarge", count: 1, dra: true},
	{instanceType: "p4d.24xlarge", count: 1, dra: true, mig: slices.Repeat([]string{"1g.5gb"}, 7)},
}

// fleetGroup is count nodes of one instance type.
type fleetGroup struct {
	instanceType string
	count        int
	dra          bool     // NVIDIA's DRA driver hands out their GPUs (k8s.NodeSpec.DRA)
	mig          []string // MIG devices on each GPU of a DRA node (k8s.NodeSpec.MIGDevices)
}

// kind is the first part of the group's node names: gpu, dra, dra-mig or cpu.
func (g fleetGroup) kind(hasGPU bool) string {
	switch {
	case !hasGPU:
		return "cpu"
	case len(g.mig) > 0:
		return "dra-mig"
	case g.dra:
		return "dra"
	}
	return "gpu"
}

// fleetNodes names nodes after their family: gpu-p5-0, gpu-g4dn-1,
// cpu-m5-0, dra-p5-0, dra-mig-p4d-0. Device-plugin GPU nodes start without
// nvidia.com/gpu capacity, as real ones do before NVIDIA's device plugin
// runs: deploying it (gpu_device_plugin) is what makes their GPUs
// allocatable. DRA nodes (dra-*) have none either, and publish no
// ResourceSlices until the DRA driver's kubelet plugin runs on them
// (gpu_dra_driver, selecting k8s.DRANodeLabel).
func fleetNodes() ([]k8s.NodeSpec, error) {
	var specs []k8s.NodeSpec
	for _, group := range defaultFleet {
		instanceType, ok := ec2catalog.Lookup(group.instanceType)
		if !ok {
			return nil, fmt.Errorf("unknown instance type %s", group.instanceType)
		}
		kind := group.kind(instanceType.HasGPU())
		family, _, _ := strings.Cut(group.instanceType, ".")
		for i := range group.count {
			specs = append(specs, k8s.NodeSpec{
				Name:               fmt.Sprintf("%s-%s-%d", kind, family, i),
				InstanceType:       instanceType,
				WithoutGPUCapacity: instanceType.HasGPU() && !group.dra,
				DRA:                group.dra,
				MIGDevices:         group.mig,
			})
		}
	}
	return specs, nil
}

package provider

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds gpu_node_group's plan-time checks against EC2's facts
// (instance types, subnets' zones, offerings), as pure functions of those
// facts: ModifyPlan reads them (node_group_plan.go) and calls these before
// any write.

// nvidiaTypesHint is the fix offered for an instance type without NVIDIA GPUs.
const nvidiaTypesHint = "pick NVIDIA GPU types: g4dn, g5, g6, g6e, gr6 (x86_64), g5g (arm64), p4d, p4de, p5, p5e, p5en " +
	"(gpu_inventory with source = \"ec2\" lists them)"

// instanceTypeChecks is what checkInstanceTypes found.
type instanceTypeChecks struct {
	// Architecture is the one architecture all types share, "" when none.
	Architecture string
}

// checkInstanceTypes checks that every instance type has NVIDIA GPUs, that
// all share one architecture, that amiType ("" when unset or unknown) fits
// it, and that waitFor "gpus_allocatable" has one GPU count to wait for.
func checkInstanceTypes(names []string, facts map[string]eks.InstanceType, amiType, waitFor string) (instanceTypeChecks, diag.Diagnostics) {
	var diags diag.Diagnostics
	var out instanceTypeChecks
	at := func(i int) path.Path { return path.Root("instance_types").AtListIndex(i) }
	for i, name := range names {
		t, ok := facts[name]
		if !ok {
			continue // reported as unknown by the caller
		}
		if _, ok := t.NVIDIAGPUs(); !ok {
			diags.AddAttributeError(at(i), "Instance type without NVIDIA GPUs",
				fmt.Sprintf("instance_types[%d]: %s; NVIDIA AMI types and the NVIDIA device plugin need NVIDIA GPUs: %s",
					i, whatInstanceTypeHas(t), nvidiaTypesHint))
		}
	}
	if diags.HasError() {
		return out, diags
	}

	// One architecture: a node group has one AMI.
	common := map[string]bool{}
	for i, name := range names {
		archs := facts[name].Architectures
		if i == 0 {
			for _, a := range archs {
				common[a] = true
			}
			continue
		}
		for a := range common {
			if !slices.Contains(archs, a) {
				delete(common, a)
			}
		}
	}
	if len(common) == 0 {
		var each []string
		for _, name := range names {
			each = append(each, name+" is "+strings.Join(facts[name].Architectures, "/"))
		}
		diags.AddAttributeError(path.Root("instance_types"), "Instance types of different architectures",
			"instance_types mix architectures ("+strings.Join(each, ", ")+"): a node group runs one AMI, so one architecture. "+
				"Use types of one architecture in this group, and another gpu_node_group for the others")
		return out, diags
	}
	switch {
	case common["x86_64"]:
		out.Architecture = "x86_64"
	case common["arm64"]:
		out.Architecture = "arm64"
	default:
		for a := range common {
			out.Architecture = a
		}
	}

	if want, ok := eks.AMIArchitecture(amiType); ok && !common[want] {
		diags.AddAttributeError(path.Root("ami_type"), "AMI type does not fit the instance types",
			fmt.Sprintf("ami_type %q runs on %s instances, and instance_types (%s) are %s: use %q, or leave ami_type unset to default from the instance types",
				amiType, want, strings.Join(names, ", "), out.Architecture, eks.MatchingAMIType(amiType, out.Architecture)))
	}

	if waitFor == nodeGroupWaitGPUsAllocatable {
		counts := map[int][]string{}
		for _, name := range names {
			gpu, _ := facts[name].NVIDIAGPUs()
			counts[gpu.Count] = append(counts[gpu.Count], name)
		}
		if len(counts) > 1 {
			var each []string
			for _, name := range names {
				gpu, _ := facts[name].NVIDIAGPUs()
				each = append(each, fmt.Sprintf("%s has %d", name, gpu.Count))
			}
			diags.AddAttributeError(path.Root("wait_for"), "GPU count differs between instance types",
				`wait_for = "gpus_allocatable" waits for each node's GPUs, and instance_types differ in GPU count (`+strings.Join(each, ", ")+
					`): use types of one GPU count, or wait_for = "ready"`)
		}
	}
	return out, diags
}

// whatInstanceTypeHas says which accelerators a type without NVIDIA GPUs
// has, e.g. "g4ad.xlarge has AMD Radeon Pro V520 GPUs".
func whatInstanceTypeHas(t eks.InstanceType) string {
	if len(t.Accelerators) == 0 {
		return t.Name + " has no GPU"
	}
	var parts []string
	for _, a := range t.Accelerators {
		name := strings.TrimSpace(a.Manufacturer + " " + a.Name)
		switch a.Kind {
		case eks.AcceleratorGPU:
			parts = append(parts, name+" GPUs")
		case eks.AcceleratorNeuron:
			parts = append(parts, name+" Neuron accelerators, no GPU")
		default:
			parts = append(parts, name+" accelerators, no GPU")
		}
	}
	return t.Name + " has " + strings.Join(parts, " and ")
}

// checkZones checks that every instance type is offered in the
// Availability Zone of at least one subnet: an error when in none (the
// group could never launch it), a warning for subnets whose zone lacks it.
func checkZones(names []string, subnetZones map[string]string, offered map[string][]string) diag.Diagnostics {
	var diags diag.Diagnostics
	subnets := make([]string, 0, len(subnetZones))
	for s := range subnetZones {
		subnets = append(subnets, s)
	}
	sort.Strings(subnets)
	for i, name := range names {
		zones := offered[name]
		var in, out []string
		for _, s := range subnets {
			if slices.Contains(zones, subnetZones[s]) {
				in = append(in, s)
			} else {
				out = append(out, s+" ("+subnetZones[s]+")")
			}
		}
		sort.Strings(zones)
		offeredIn := "in no Availability Zone of this region"
		if len(zones) > 0 {
			offeredIn = "in " + strings.Join(zones, ", ")
		}
		switch {
		case len(in) == 0:
			diags.AddAttributeError(path.Root("instance_types").AtListIndex(i), "Instance type not offered in the subnets' zones",
				fmt.Sprintf("instance_types[%d]: %s is not offered in the Availability Zone of any of subnet_ids (%s); it is offered %s. "+
					"Add a subnet in one of those zones, or pick a type offered in yours", i, name, strings.Join(out, ", "), offeredIn))
		case len(out) > 0:
			diags.AddAttributeWarning(path.Root("instance_types").AtListIndex(i), "Instance type not offered in every subnet's zone",
				fmt.Sprintf("instance_types[%d]: %s is not offered in the zone of %s (offered %s): nodes of this type launch only in the other subnets",
					i, name, strings.Join(out, ", "), offeredIn))
		}
	}
	return diags
}

package provider

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// catalogFacts is what DescribeInstanceTypes says of names, taken from the
// one table the emulator serves too.
func catalogFacts(t *testing.T, names ...string) map[string]eks.InstanceType {
	t.Helper()
	out := map[string]eks.InstanceType{}
	for _, name := range names {
		c, ok := ec2catalog.Lookup(name)
		require.True(t, ok, name)
		vcpus, err := strconv.Atoi(c.CPU)
		require.NoError(t, err)
		it := eks.InstanceType{Name: name, Architectures: []string{c.Architecture}, VCPUs: vcpus, MemoryMiB: int64(c.MemoryGi) * 1024}
		if a := c.EC2Accelerator; a.Count > 0 {
			kind := eks.AcceleratorGPU
			if a.Info == ec2catalog.AcceleratorInfoNeuron {
				kind = eks.AcceleratorNeuron
			}
			it.Accelerators = []eks.Accelerator{{Kind: kind, Manufacturer: a.Manufacturer, Name: a.Name, Count: a.Count, MemoryMiB: int64(a.MemoryMiB)}}
		}
		out[name] = it
	}
	return out
}

func errorDetails(diags diag.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		parts = append(parts, d.Severity().String()+": "+d.Detail())
	}
	return strings.Join(parts, "\n")
}

func TestCheckInstanceTypesRejectsWhatHasNoNVIDIAGPU(t *testing.T) {
	for _, tc := range []struct {
		description string
		types       []string
		amiType     string
		waitFor     string
		wantError   string // "" for none
		wantArch    string
	}{
		{"an AMD GPU type is named with its GPU and the fix", []string{"g4ad.xlarge"}, "", "ready",
			"instance_types[0]: g4ad.xlarge has AMD Radeon Pro V520 GPUs; NVIDIA AMI types and the NVIDIA device plugin need NVIDIA GPUs: pick NVIDIA GPU types: g4dn, g5", ""},
		{"a Neuron type says it has no GPU", []string{"inf2.xlarge"}, "", "ready", "inf2.xlarge has AWS Inferentia2 Neuron accelerators, no GPU", ""},
		{"a Gaudi type is not an NVIDIA GPU", []string{"dl1.24xlarge"}, "", "ready", "dl1.24xlarge has Habana Gaudi HL-205 GPUs", ""},
		{"a CPU type has no GPU", []string{"m5.xlarge"}, "", "ready", "m5.xlarge has no GPU", ""},
		{"the bad type is found by its index among good ones", []string{"g5.xlarge", "trn1.2xlarge"}, "", "ready", "instance_types[1]: trn1.2xlarge has", ""},
		{"mixed architectures are refused, each type named", []string{"g5.xlarge", "g5g.xlarge"}, "", "ready",
			"instance_types mix architectures (g5.xlarge is x86_64, g5g.xlarge is arm64)", ""},
		{"an arm64 AMI type on x86_64 types names the one that fits", []string{"p5.48xlarge"}, "AL2023_ARM_64_NVIDIA", "ready",
			`ami_type "AL2023_ARM_64_NVIDIA" runs on arm64 instances, and instance_types (p5.48xlarge) are x86_64: use "AL2023_x86_64_NVIDIA"`, ""},
		{"a Bottlerocket x86 AMI on arm64 suggests Bottlerocket's arm64 one", []string{"g5g.xlarge"}, "BOTTLEROCKET_x86_64_NVIDIA", "ready",
			`use "BOTTLEROCKET_ARM_64_NVIDIA"`, ""},
		{"AL2's GPU AMI is x86_64 only", []string{"g5g.2xlarge"}, "AL2_x86_64_GPU", "ready", `ami_type "AL2_x86_64_GPU" runs on x86_64`, ""},
		{"gpus_allocatable needs one GPU count", []string{"g5.xlarge", "g5.12xlarge"}, "", "gpus_allocatable",
			"instance_types differ in GPU count (g5.xlarge has 1, g5.12xlarge has 4)", ""},
		{"ready does not need one GPU count", []string{"g5.xlarge", "g5.12xlarge"}, "", "ready", "", "x86_64"},
		{"p5 defaults to x86_64", []string{"p5.48xlarge"}, "", "gpus_allocatable", "", "x86_64"},
		{"g5g is arm64", []string{"g5g.xlarge"}, "AL2023_ARM_64_NVIDIA", "ready", "", "arm64"},
		{"CUSTOM runs on any architecture", []string{"g5g.xlarge"}, "CUSTOM", "ready", "", "arm64"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			checked, diags := checkInstanceTypes(tc.types, catalogFacts(t, tc.types...), tc.amiType, tc.waitFor)
			if tc.wantError == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				require.Equal(t, tc.wantArch, checked.Architecture)
				return
			}
			require.True(t, diags.HasError())
			require.Contains(t, errorDetails(diags), tc.wantError)
		})
	}
}

func TestCheckZones(t *testing.T) {
	subnets := map[string]string{"subnet-1": "us-west-2a", "subnet-4": "us-west-2d"}
	offered := map[string][]string{"p5.48xlarge": {"us-west-2a", "us-west-2b", "us-west-2c"}, "g5.xlarge": {"us-west-2a", "us-west-2d"}}

	diags := checkZones([]string{"g5.xlarge"}, subnets, offered)
	require.Empty(t, diags, "a type offered in every subnet's zone passes")

	diags = checkZones([]string{"p5.48xlarge"}, subnets, offered)
	require.False(t, diags.HasError(), "a type offered in some subnets' zones only warns")
	require.Contains(t, errorDetails(diags), "p5.48xlarge is not offered in the zone of subnet-4 (us-west-2d)")

	diags = checkZones([]string{"g5.xlarge", "p5.48xlarge"}, map[string]string{"subnet-4": "us-west-2d"}, offered)
	require.True(t, diags.HasError(), "a type offered in no subnet's zone is refused")
	require.Contains(t, errorDetails(diags), "instance_types[1]: p5.48xlarge is not offered in the Availability Zone of any of subnet_ids (subnet-4 (us-west-2d)); "+
		"it is offered in us-west-2a, us-west-2b, us-west-2c. Add a subnet in one of those zones")
}

func TestNodeGroupValidateRefusesInconsistentConfiguration(t *testing.T) {
	ctx := context.Background()
	base := func() nodeGroupModel {
		return nodeGroupModel{
			AMIType: types.StringNull(), DiskSize: types.Int64Null(), GPUTaint: types.BoolValue(true),
			Taints:  types.SetNull(nodeGroupTaintObjectType),
			Scaling: []nodeGroupScalingModel{{MinSize: types.Int64Value(0), MaxSize: types.Int64Value(4), DesiredSize: types.Int64Value(2)}},
		}
	}
	taints := func(ts ...eks.Taint) types.Set {
		v, diags := taintsValue(ctx, ts, nil)
		require.False(t, diags.HasError())
		return v
	}
	for _, tc := range []struct {
		description string
		change      func(m *nodeGroupModel)
		want        string // "" for valid
	}{
		{"a plain group is valid", func(*nodeGroupModel) {}, ""},
		{"desired above max", func(m *nodeGroupModel) { m.Scaling[0].DesiredSize = types.Int64Value(5) }, "scaling desired_size 5 is outside min_size 0 .. max_size 4"},
		{"desired below min", func(m *nodeGroupModel) {
			m.Scaling[0].MinSize = types.Int64Value(3)
		}, "scaling desired_size 2 is outside min_size 3 .. max_size 4"},
		{"min above max", func(m *nodeGroupModel) { m.Scaling[0].MinSize = types.Int64Value(5) }, "scaling min_size 5 is more than max_size 4"},
		{"an unknown desired size is checked at apply", func(m *nodeGroupModel) { m.Scaling[0].DesiredSize = types.Int64Unknown() }, ""},
		{"desired 0 scales from zero", func(m *nodeGroupModel) { m.Scaling[0].DesiredSize = types.Int64Value(0) }, ""},
		{"CUSTOM without a launch template", func(m *nodeGroupModel) { m.AMIType = types.StringValue("CUSTOM") }, `ami_type "CUSTOM" takes its AMI from a launch template`},
		{"CUSTOM with a launch template", func(m *nodeGroupModel) {
			m.AMIType = types.StringValue("CUSTOM")
			m.LaunchTemplate = []nodeGroupLaunchTemplateModel{{ID: types.StringValue("lt-0abc"), Name: types.StringNull(), Version: types.StringValue("1")}}
		}, ""},
		{"disk_size with a launch template", func(m *nodeGroupModel) {
			m.DiskSize = types.Int64Value(200)
			m.LaunchTemplate = []nodeGroupLaunchTemplateModel{{ID: types.StringValue("lt-0abc"), Name: types.StringNull(), Version: types.StringValue("1")}}
		}, "disk_size conflicts with launch_template"},
		{"two taints of one key and effect", func(m *nodeGroupModel) {
			m.Taints = taints(eks.Taint{Key: "a", Value: "1", Effect: "NO_SCHEDULE"}, eks.Taint{Key: "a", Value: "2", Effect: "NO_SCHEDULE"})
		}, `two taints with key "a" and effect NO_SCHEDULE`},
		{"a GPU taint of another value while gpu_taint is on", func(m *nodeGroupModel) {
			m.Taints = taints(eks.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: "NO_SCHEDULE"})
		}, "set gpu_taint = false to write your own GPU taint"},
		{"the same GPU taint written by hand is fine", func(m *nodeGroupModel) {
			m.Taints = taints(eks.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"})
		}, ""},
		{"an own GPU taint with gpu_taint off", func(m *nodeGroupModel) {
			m.GPUTaint = types.BoolValue(false)
			m.Taints = taints(eks.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: "NO_SCHEDULE"})
		}, ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			m := base()
			tc.change(&m)
			diags := m.validate(ctx)
			if tc.want == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.True(t, diags.HasError())
			require.Contains(t, errorDetails(diags), tc.want)
		})
	}
}

func TestNodeGroupDefaultsShowInEffectiveValuesOnly(t *testing.T) {
	ctx := context.Background()
	m := nodeGroupModel{
		Labels:   types.MapValueMust(types.StringType, map[string]attr.Value{"team": types.StringValue("ml")}),
		Taints:   types.SetNull(nodeGroupTaintObjectType),
		GPUTaint: types.BoolValue(true),
		Tags:     types.MapNull(types.StringType),
	}
	require.False(t, m.planEffective(ctx).HasError())
	spec, diags := m.toSpec(ctx)
	require.False(t, diags.HasError())
	require.Equal(t, map[string]string{"team": "ml", "nvidia.com/gpu.present": "true"}, spec.Labels)
	require.Equal(t, []eks.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}}, spec.Taints)

	// What EKS reports back leaves labels and taints as written.
	live := eks.NodeGroup{NodeGroupSpec: spec}
	live.ClusterName, live.Name = "prod", "gpu"
	require.False(t, m.setFromLive(ctx, live).HasError())
	require.Equal(t, map[string]string{"team": "ml"}, stringMapOf(m.Labels))
	require.True(t, m.Taints.IsNull(), "the GPU taint is a default, not a written taint")
	require.Equal(t, spec.Labels, stringMapOf(m.EffectiveLabels))
	require.Len(t, m.EffectiveTaints.Elements(), 1)
	require.Equal(t, "prod:gpu", m.ID.ValueString())

	// A GPU label the user writes stays written.
	m.Labels = types.MapValueMust(types.StringType, map[string]attr.Value{"nvidia.com/gpu.present": types.StringValue("true")})
	require.False(t, m.setFromLive(ctx, live).HasError())
	require.Equal(t, map[string]string{"nvidia.com/gpu.present": "true", "team": "ml"}, stringMapOf(m.Labels),
		"team was added out of band: drift shows in labels")

	// With gpu_taint off, a GPU taint found on the group is drift in taints.
	m.GPUTaint = types.BoolValue(false)
	require.False(t, m.setFromLive(ctx, live).HasError())
	got, diags := taintsOf(ctx, m.Taints)
	require.False(t, diags.HasError())
	require.Equal(t, []eks.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}}, got)
}

func TestNodeGroupGPUFactsAreNullWhereTypesDiffer(t *testing.T) {
	var m nodeGroupModel
	m.setGPUFacts([]string{"p5.48xlarge"}, catalogFacts(t, "p5.48xlarge"))
	require.Equal(t, "H100", m.GPUProduct.ValueString())
	require.EqualValues(t, 8, m.GPUsPerNode.ValueInt64())
	require.EqualValues(t, 81920, m.GPUMemoryMiB.ValueInt64())

	m.setGPUFacts([]string{"g5.xlarge", "g5.12xlarge"}, catalogFacts(t, "g5.xlarge", "g5.12xlarge"))
	require.Equal(t, "A10G", m.GPUProduct.ValueString())
	require.True(t, m.GPUsPerNode.IsNull())
	require.False(t, m.GPUMemoryMiB.IsNull())
}

func TestClientRequestTokensAreUUIDs(t *testing.T) {
	a, b := newClientRequestToken(), newClientRequestToken()
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, a)
	require.NotEqual(t, a, b)
	require.Len(t, uniqueSuffix(), uniqueSuffixLength)
}

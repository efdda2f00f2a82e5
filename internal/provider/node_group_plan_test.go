package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
)

func TestAccNodeGroup_rejectedAtPlanWithNoWrite(t *testing.T) {
	testAccPreCheck(t)
	for _, tc := range []struct {
		description string
		body        string
		want        string
	}{
		{"a CPU instance type", `instance_types = ["m5.xlarge"]`,
			`instance_types[0]: m5.xlarge has no GPU; NVIDIA AMI types and the NVIDIA device plugin need NVIDIA GPUs: pick NVIDIA GPU types`},
		{"an AMD GPU instance type", `instance_types = ["g4ad.xlarge"]`, `g4ad.xlarge has AMD Radeon Pro V520 GPUs; NVIDIA AMI types`},
		{"a Neuron instance type", `instance_types = ["inf2.xlarge"]`, `inf2.xlarge has AWS Inferentia2 Neuron accelerators, no GPU`},
		{"mixed architectures", `instance_types = ["g5.xlarge", "g5g.xlarge"]`, `instance_types mix architectures (g5.xlarge is x86_64, g5g.xlarge is arm64)`},
		{"an arm64 AMI type on x86_64 instances", "instance_types = [\"p5.48xlarge\"]\n  ami_type = \"AL2023_ARM_64_NVIDIA\"",
			`ami_type "AL2023_ARM_64_NVIDIA" runs on arm64 instances, and instance_types (p5.48xlarge) are x86_64: use "AL2023_x86_64_NVIDIA"`},
		{"an instance type EC2 does not know", `instance_types = ["p9.96xlarge"]`, `"p9.96xlarge"`},
		{"a type offered in none of the subnets' zones", "instance_types = [\"p5.48xlarge\"]",
			`p5.48xlarge is not offered in the Availability Zone of any of subnet_ids`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			subnets := testSubnetsABC
			if tc.description == "a type offered in none of the subnets' zones" {
				subnets = `["subnet-0a1b2c3d4e5f60004"]` // us-west-2d, where the emulator offers no p5
			}
			config := providerConfig() + fmt.Sprintf(`
resource "gpu_node_group" "test" {
  cluster_name    = %q
  node_group_name = "ng-rejected"
  node_role_arn   = %q
  subnet_ids      = %s
  %s
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
}
`, emu.ClusterName(), testNodeRole, subnets, tc.body)
			emu.ResetCallCounts()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      config,
					PlanOnly:    true,
					ExpectError: wrappedText(tc.want),
				}},
			})
			calls := emu.CallCounts()
			require.Positive(t, calls["ec2:DescribeInstanceTypes"], "the plan checked against EC2")
			for _, write := range []string{"eks:CreateNodegroup", "eks:UpdateNodegroupConfig", "eks:TagResource", "autoscaling:CreateOrUpdateTags"} {
				require.Zero(t, calls[write], "%s called by a plan that failed", write)
			}
		})
	}
}

func TestAccNodeGroup_instanceTypesKnownAtApplyAreCheckedBeforeAnyWrite(t *testing.T) {
	testAccPreCheck(t)
	emu.ResetCallCounts()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// instance_types known only at apply (from another resource):
			// the plan cannot check them, Create does, before CreateNodegroup.
			Config: providerConfig() + fmt.Sprintf(`
resource "terraform_data" "types" {
  input = ["g4ad.xlarge"]
}
resource "gpu_node_group" "test" {
  cluster_name    = %q
  node_group_name = "ng-late"
  node_role_arn   = %q
  subnet_ids      = %s
  instance_types  = terraform_data.types.output
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
}
`, emu.ClusterName(), testNodeRole, testSubnetsABC),
			ExpectError: wrappedText(`g4ad.xlarge has AMD Radeon Pro V520 GPUs`),
		}},
	})
	require.Zero(t, emu.CallCounts()["eks:CreateNodegroup"])
}

// wrappedText matches text as the Terraform CLI prints it in a
// diagnostic, wrapped at any space.
func wrappedText(text string) *regexp.Regexp {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(strings.Join(words, `\s+`))
}

func TestAccNodeGroup_invalidInputFailsAtPlanBeforeAnyAWSCall(t *testing.T) {
	testAccPreCheck(t)
	for _, tc := range []struct {
		description string
		body        string
		want        string
	}{
		{"a Kubernetes taint effect name", `taints = [{ key = "a", effect = "NoSchedule" }]`, `value must be one of: ["NO_SCHEDULE" "NO_EXECUTE" "PREFER_NO_SCHEDULE"]`},
		{"a role name for an ARN", `node_role_arn = "eks-gpu-nodes"`, `must be an IAM role ARN`},
		{"a subnet name for an ID", `subnet_ids = ["private-a"]`, `must be a subnet ID`},
		{"both a name and a prefix", `node_group_name_prefix = "gpu-"`, `cannot be specified when "node_group_name" is specified`},
		{"a wait_for it does not know", `wait_for = "nodes_ready"`, `value must be one of: ["active" "ready" "gpus_allocatable"]`},
		{"an AMI type without NVIDIA drivers", `ami_type = "AL2023_x86_64_STANDARD"`, `ami_type value must be one of`},
		{"CUSTOM without a launch template", `ami_type = "CUSTOM"`, `ami_type "CUSTOM" takes its AMI from a launch template`},
		{"a launch template with disk_size", "disk_size = 100\n  launch_template {\n    id      = \"lt-0abc\"\n    version = \"1\"\n  }",
			`disk_size conflicts with launch_template`},
		{"a launch template with both id and name", "launch_template {\n    id      = \"lt-0abc\"\n    name    = \"gpu\"\n    version = \"1\"\n  }",
			`launch_template takes exactly one of id and name`},
		{"update_config with both bounds", "update_config {\n    max_unavailable            = 1\n    max_unavailable_percentage = 10\n  }",
			`update_config takes exactly one of max_unavailable (nodes) and max_unavailable_percentage`},
		{"a GPU taint of another value while gpu_taint is on", `taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NO_SCHEDULE" }]`,
			`set gpu_taint = false to write your own GPU taint`},
		{"a label key Kubernetes refuses", `labels = { "-bad" = "x" }`, `is not a qualified name`},
		{"a fractional size", `disk_size = 20.5`, `disk_size`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			role := fmt.Sprintf("node_role_arn = %q", testNodeRole)
			subnets := "subnet_ids = " + testSubnetsABC
			name := `node_group_name = "ng-invalid"`
			body := tc.body
			switch {
			case strings.HasPrefix(body, "node_role_arn"):
				role, body = body, ""
			case strings.HasPrefix(body, "subnet_ids"):
				subnets, body = body, ""
			}
			config := providerConfig() + fmt.Sprintf(`
resource "gpu_node_group" "test" {
  cluster_name   = %q
  %s
  %s
  %s
  instance_types = ["g5.xlarge"]
  %s
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
}
`, emu.ClusterName(), name, role, subnets, body)
			emu.ResetCallCounts()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: config, PlanOnly: true, ExpectError: wrappedText(tc.want)}},
			})
			require.Empty(t, emu.CallCounts(), "invalid input reached AWS")
		})
	}
}

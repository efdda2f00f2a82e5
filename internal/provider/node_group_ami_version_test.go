package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// AL2's accelerated AMI ends with Kubernetes 1.32: a group of it is refused
// at plan on the testbed's cluster (a later version) and at a later
// version, and planned at 1.32.
func TestAccNodeGroup_al2AMITypeRefusedAfterKubernetes132(t *testing.T) {
	testAccPreCheck(t)
	group := func(version string) string {
		return testAccNodeGroupConfig("ng-al2", `
  instance_types = ["g5.xlarge"]
  ami_type       = "AL2_x86_64_GPU"
  wait_for       = "active"
  `+version+`
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 0
  }
`)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:   group(""),
				PlanOnly: true,
				ExpectError: wrapped(`ami_type "AL2_x86_64_GPU" at Kubernetes 1.`, `(the version of cluster "`+emu.ClusterName()+`")`,
					"EKS publishes no AL2_x86_64_GPU AMI", "AL2 AMIs ended with 1.32", `Fix: set ami_type to "AL2023_x86_64_NVIDIA"`),
			},
			{
				Config:      group(`version = "1.33"`),
				PlanOnly:    true,
				ExpectError: wrapped(`ami_type "AL2_x86_64_GPU" at Kubernetes 1.33 (version)`, "AL2 AMIs ended with 1.32"),
			},
			{
				Config:             group(`version = "1.32"`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

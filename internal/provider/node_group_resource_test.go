package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

const nodeGroupAddress = "gpu_node_group.test"

// The emulator's subnets: 0001 in us-west-2a, 0002 in b, 0003 in c, 0004 in d.
const (
	testSubnetsABC = `["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002", "subnet-0a1b2c3d4e5f60003"]`
	testNodeRole   = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
)

// testAccNodeGroupConfig is a gpu_node_group named name in the emulator's
// cluster, with body inside the resource block.
func testAccNodeGroupConfig(name, body string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_node_group" "test" {
  cluster_name    = %q
  node_group_name = %q
  node_role_arn   = %q
  subnet_ids      = %s
%s
}
`, emu.ClusterName(), name, testNodeRole, testSubnetsABC, body)
}

// asgTags are the tags of the node group's Auto Scaling groups, which must
// be one, as the emulator makes them.
func asgTags(t *testing.T, s *terraform.State) map[string]string {
	t.Helper()
	rs, ok := s.RootModule().Resources[nodeGroupAddress]
	require.True(t, ok)
	require.Equal(t, "1", rs.Primary.Attributes["autoscaling_group_names.#"])
	return emu.AutoScalingGroupTags(rs.Primary.Attributes["autoscaling_group_names.0"])
}

const (
	nodeTemplateLabel = "k8s.io/cluster-autoscaler/node-template/label/"
	nodeTemplateTaint = "k8s.io/cluster-autoscaler/node-template/taint/"
	nodeTemplateGPUs  = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
)

func TestAccNodeGroup_p5GPUsAllocatableThenScaledRelabeledImportedReplaced(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "ng-alloc")
	const name = "ng-alloc"
	plugin := fmt.Sprintf(`
resource "gpu_device_plugin" "eks" {
  namespace     = %q
  node_selector = { "eks.amazonaws.com/nodegroup" = %q }
}
`, ns+"-plugin", name)
	group := func(instanceType string, desired int, labels, taints string) string {
		return testAccNodeGroupConfig(name, fmt.Sprintf(`
  instance_types = [%q]
  wait_for       = "gpus_allocatable"
  labels         = %s
  %s
  scaling {
    min_size     = 0
    max_size     = 4
    desired_size = %d
  }
  timeouts {
    create = "4m"
    update = "4m"
  }
  depends_on = [gpu_device_plugin.eks]
`, instanceType, labels, taints, desired)) + plugin
	}
	workload := fmt.Sprintf(`
resource "gpu_workload" "train" {
  kind = "job"
  metadata {
    name      = "train"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }
  node_selector = { "eks.amazonaws.com/nodegroup" = gpu_node_group.test.node_group_name }
  gpu {
    count = 8
  }
  job {
    completions = 2
    parallelism = 2
  }
}
`, ns)
	step1 := group("p5.48xlarge", 2, `{ team = "ml" }`, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: the device plugin, then two p5.48xlarge
			// nodes whose 16 GPUs are allocatable when apply returns, then
			// a job that takes all of them and completes.
			{
				Config: step1 + workload,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("id"), knownvalue.StringExact(emu.ClusterName()+":"+name)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ami_type"), knownvalue.StringExact("AL2023_x86_64_NVIDIA")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("gpu_product"), knownvalue.StringExact("H100")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("gpus_per_node"), knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("labels"), knownvalue.MapExact(map[string]knownvalue.Check{
						"team": knownvalue.StringExact("ml"),
					})),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("taints"), knownvalue.Null()),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("effective_labels"), knownvalue.MapExact(map[string]knownvalue.Check{
						"team": knownvalue.StringExact("ml"), "nvidia.com/gpu.present": knownvalue.StringExact("true"),
					})),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("effective_taints"), knownvalue.SetExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"key": knownvalue.StringExact("nvidia.com/gpu"), "value": knownvalue.StringExact("true"), "effect": knownvalue.StringExact("NO_SCHEDULE"),
						}),
					})),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
				},
				Check: func(s *terraform.State) error {
					// Scale-from-zero: the node-template tags of each label, taint and the GPUs.
					tags := asgTags(t, s)
					require.Equal(t, "ml", tags[nodeTemplateLabel+"team"])
					require.Equal(t, "true", tags[nodeTemplateLabel+"nvidia.com/gpu.present"])
					require.Equal(t, "true:NoSchedule", tags[nodeTemplateTaint+"nvidia.com/gpu"])
					require.Equal(t, "8", tags[nodeTemplateGPUs])
					return nil
				},
			},
			// A second plan changes nothing: defaults live in effective_*.
			{
				Config: step1 + workload,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			// Update and Read: scale to 3 in place; apply returns with 24 GPUs allocatable.
			{
				Config: group("p5.48xlarge", 3, `{ team = "ml" }`, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("scaling").AtSliceIndex(0).AtMapKey("desired_size"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(24)),
				},
			},
			// Update and Read: a label and a taint change in place, and the
			// Auto Scaling group's tags follow (the old label's tag goes).
			{
				Config: group("p5.48xlarge", 3, `{ tier = "research" }`, `taints = [{ key = "dedicated", value = "ml", effect = "PREFER_NO_SCHEDULE" }]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("labels"), knownvalue.MapExact(map[string]knownvalue.Check{
						"tier": knownvalue.StringExact("research"),
					})),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("effective_taints"), knownvalue.SetSizeExact(2)),
				},
				Check: func(s *terraform.State) error {
					tags := asgTags(t, s)
					require.Equal(t, "research", tags[nodeTemplateLabel+"tier"])
					require.NotContains(t, tags, nodeTemplateLabel+"team", "the removed label's tag is deleted")
					require.Equal(t, "ml:PreferNoSchedule", tags[nodeTemplateTaint+"dedicated"])
					require.Equal(t, "true:NoSchedule", tags[nodeTemplateTaint+"nvidia.com/gpu"])
					require.Equal(t, "8", tags[nodeTemplateGPUs])
					return nil
				},
			},
			// ImportState: cluster_name:node_group_name.
			{
				ResourceName:      nodeGroupAddress,
				ImportState:       true,
				ImportStateId:     emu.ClusterName() + ":" + name,
				ImportStateVerify: true,
				// wait_for and timeouts are not EKS's: an import takes their defaults.
				ImportStateVerifyIgnore: []string{"wait_for", "timeouts"},
			},
			// Changing the instance types replaces the group.
			{
				Config: group("p4d.24xlarge", 1, `{ tier = "research" }`, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("gpu_product"), knownvalue.StringExact("A100")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(8)),
				},
			},
		},
	})
}

func TestAccNodeGroup_outOfBandChangesShowAsDriftAndAreRepaired(t *testing.T) {
	testAccPreCheck(t)
	const name = "ng-oob"
	config := testAccNodeGroupConfig(name, `
  instance_types = ["g5.xlarge"]
  wait_for       = "ready"
  scaling {
    min_size     = 1
    max_size     = 2
    desired_size = 1
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(1)),
				},
			},
			// A scaling and a label changed in the console show as drift, and
			// apply takes them back.
			{
				PreConfig:    func() { changeNodeGroupOutOfBand(t, name) },
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(nodeGroupAddress, "scaling.0.desired_size", "2"),
					resource.TestCheckResourceAttr(nodeGroupAddress, "labels.%", "1"),
					resource.TestCheckResourceAttr(nodeGroupAddress, "labels.console", "edit"),
					resource.TestCheckResourceAttr(nodeGroupAddress, "effective_labels.console", "edit"),
				),
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("scaling").AtSliceIndex(0).AtMapKey("desired_size"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("labels"), knownvalue.Null()),
				},
			},
			// A node-template tag removed from the Auto Scaling group shows as
			// a diff, and apply puts it back.
			{
				PreConfig: func() { deleteASGTag(t, name, nodeTemplateGPUs) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				Check: func(s *terraform.State) error {
					require.Equal(t, "1", asgTags(t, s)[nodeTemplateGPUs])
					return nil
				},
			},
			// Deleted in the console: refresh drops it, apply creates it again.
			{
				PreConfig: func() { require.NoError(t, emu.DeleteNodegroupOutOfBand(emu.ClusterName(), name)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(1)),
				},
			},
		},
	})
}

func TestAccNodeGroup_survivesThrottling(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Every kind of call is throttled at first: DescribeInstanceTypes
				// at plan, CreateNodegroup, the status polls.
				PreConfig: func() {
					emu.ResetCallCounts()
					emu.ThrottleNext(4)
				},
				Config: testAccNodeGroupConfig("ng-throttled", `
  instance_types = ["g6.xlarge"]
  wait_for       = "active"
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Null()),
				},
				Check: func(*terraform.State) error {
					// Throttled calls are not counted: one create answered, whatever the retries.
					require.Equal(t, 1, emu.CallCounts()["eks:CreateNodegroup"])
					return nil
				},
			},
		},
	})
}

func TestAccNodeGroup_createFailedShowsHealthIssueAndIsReplaced(t *testing.T) {
	testAccPreCheck(t)
	config := testAccNodeGroupConfig("ng-failed", `
  instance_types = ["p5.48xlarge"]
  scaling {
    min_size     = 1
    max_size     = 1
    desired_size = 1
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					emu.FailNextNodegroupCreate("AsgInstanceLaunchFailures", "Could not launch On-Demand Instances. InsufficientInstanceCapacity")
				},
				Config:      config,
				ExpectError: regexp.MustCompile(`(?s)CREATE_FAILED.*AsgInstanceLaunchFailures: Could not launch On-Demand Instances. InsufficientInstanceCapacity.*kept in the state and tainted`),
			},
			// The failed group was kept, tainted: the next apply replaces it.
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(1)),
				},
			},
		},
	})
}

func TestAccNodeGroup_launchTemplateVersionUpdatesInPlace(t *testing.T) {
	testAccPreCheck(t)
	config := func(version string) string {
		return testAccNodeGroupConfig("ng-custom", fmt.Sprintf(`
  instance_types = ["g6e.xlarge"]
  ami_type       = "CUSTOM"
  wait_for       = "active"
  launch_template {
    name    = "gpu-nodes"
    version = %q
  }
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
`, version))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("1"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("launch_template").AtSliceIndex(0).AtMapKey("id"),
						knownvalue.StringRegexp(regexp.MustCompile(`^lt-[0-9a-f]+$`))),
				},
			},
			// A new template version rolls the nodes in place (UpdateNodegroupVersion).
			{
				Config: config("2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("launch_template").AtSliceIndex(0).AtMapKey("version"), knownvalue.StringExact("2")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("launch_template").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("gpu-nodes")),
				},
			},
			{
				Config: config("2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

func TestAccNodeGroup_desiredSizeLeftToTheAutoscalerTagsUpdateInPlace(t *testing.T) {
	testAccPreCheck(t)
	config := func(desired int, tags string) string {
		return testAccNodeGroupConfig("ng-autoscaled", fmt.Sprintf(`
  instance_types = ["g5.xlarge"]
  wait_for       = "active"
  tags           = %s
  scaling {
    min_size     = 0
    max_size     = 4
    desired_size = %d
  }
  lifecycle {
    ignore_changes = [scaling[0].desired_size]
  }
`, tags, desired))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config(1, "null")},
			// The autoscaler owns desired_size: a change of it plans nothing.
			{
				Config: config(3, "null"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("scaling").AtSliceIndex(0).AtMapKey("desired_size"), knownvalue.Int64Exact(1)),
				},
			},
			// Tags of the node group change in place (TagResource), the size still left alone.
			{
				Config: config(3, `{ team = "ml", cost-center = "gpu" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("tags"), knownvalue.MapExact(map[string]knownvalue.Check{
						"team": knownvalue.StringExact("ml"), "cost-center": knownvalue.StringExact("gpu"),
					})),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("scaling").AtSliceIndex(0).AtMapKey("desired_size"), knownvalue.Int64Exact(1)),
				},
			},
			// Removing one is an untag, and a refresh reads the same back.
			{
				Config: config(3, `{ team = "ml" }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("tags"), knownvalue.MapExact(map[string]knownvalue.Check{
						"team": knownvalue.StringExact("ml"),
					})),
				},
			},
			{
				Config:             config(3, `{ team = "ml" }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
			},
		},
	})
}

// deleteASGTag removes key from the Auto Scaling groups of node group name,
// as someone would in the console.
func deleteASGTag(t *testing.T, name, key string) {
	t.Helper()
	ctx := context.Background()
	client, err := eks.Settings{}.Connect(ctx)
	require.NoError(t, err)
	group, found, err := client.ReadNodeGroup(ctx, emu.ClusterName(), name)
	require.NoError(t, err)
	require.True(t, found)
	for _, asg := range group.AutoScalingGroupNames {
		value, ok := emu.AutoScalingGroupTags(asg)[key]
		require.True(t, ok, "%s has no tag %s to delete", asg, key)
		require.NoError(t, client.SyncAutoScalingGroupTags(ctx, []string{asg}, map[string]string{key: value}, nil))
		require.NotContains(t, emu.AutoScalingGroupTags(asg), key)
	}
}

// changeNodeGroupOutOfBand scales node group name to 2 and adds a label,
// as someone would in the console.
func changeNodeGroupOutOfBand(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	client, err := eks.Settings{}.Connect(ctx)
	require.NoError(t, err)
	group, found, err := client.ReadNodeGroup(ctx, emu.ClusterName(), name)
	require.NoError(t, err)
	require.True(t, found)
	changed := group.NodeGroupSpec
	changed.Scaling.Desired = 2
	changed.Labels = map[string]string{"console": "edit"}
	for k, v := range group.Labels {
		changed.Labels[k] = v
	}
	_, err = client.UpdateNodeGroup(ctx, group.NodeGroupSpec, changed)
	require.NoError(t, err)
}

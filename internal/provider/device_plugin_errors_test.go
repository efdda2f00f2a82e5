package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// The errors gpu_device_plugin gives: at plan for bad input (and the
// examples, which must plan), and at apply when the plugin does not become
// ready in time, with the reason per node.

func TestAccDevicePlugin_invalidConfig(t *testing.T) {
	testAccPreCheck(t)
	invalid := func(body string) string {
		return providerConfig() + "resource \"gpu_device_plugin\" \"test\" {\n" + body + "\n}\n"
	}
	steps := []struct {
		body string
		want string
	}{
		{`config {
  time_slicing {
    resource {
      replicas = 1
    }
  }
}`, `config.time_slicing.resource\[0\].replicas value must be at least 2`},
		{`config {
  mig_strategy = "auto"
}`, `(?s)mig_strategy.*value must be one of`},
		{`config {
  time_slicing {
    resource {
      replicas = 2
    }
  }
  mps {
    resource {
      replicas = 2
    }
  }
}`, `(?s)Invalid Attribute Combination.*mps`},
		{`config {
  time_slicing {
    resource {
      name     = "gpu"
      replicas = 2
    }
  }
}`, `(?s)Invalid NVIDIA resource name.*does not start with "nvidia.com/"`},
		{`config {
  device_list_strategy = ["envvar", "files"]
}`, `(?s)device_list_strategy.*value must be one of`},
		{`name = "Device_Plugin"`, `(?s)Invalid Kubernetes name.*not a DNS-1123 label`},
		{`namespace = "gpu.system"`, `(?s)Invalid Kubernetes name.*not a DNS-1123 label`},
		{`resources = {
  requests = { cpu = "lots" }
}`, `(?s)Invalid quantity.*"lots" is not a Kubernetes quantity`},
		{`max_unavailable = "0"`, `(?s)max_unavailable.*positive count`},
		{`config {
  time_slicing {}
}`, `(?s)Nothing to share.*config.time_slicing has no resource block`},
		{`config {
  mps {
    resource {
      replicas = 2
    }
    resource {
      name     = "nvidia.com/gpu"
      replicas = 4
    }
  }
}`, `(?s)Resource shared twice.*"nvidia.com/gpu" more than once`},
		{`dcgm_exporter {
  port = 70000
}`, `(?s)dcgm_exporter.port value must be between 1 and 65535`},
		{`resources = {
  requests = { memory = "1Gi" }
  limits   = { memory = "512Mi" }
}`, `(?s)Request above limit.*resources.requests\["memory"\] 1Gi is more than resources.limits\["memory"\]\s+512Mi`},
	}
	var testSteps []resource.TestStep
	for _, s := range steps {
		testSteps = append(testSteps, resource.TestStep{Config: invalid(s.body), PlanOnly: true, ExpectError: regexp.MustCompile(s.want)})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: testSteps})
}

func TestAccDevicePlugin_timeoutDiagnosis(t *testing.T) {
	testAccPreCheck(t)
	// A CPU node that says it has a GPU: the plugin runs there and finds none.
	ctx := context.Background()
	profile, _ := ec2catalog.Lookup("m5.xlarge")
	require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: "dp-diag-cpu-0", InstanceType: profile,
		ExtraLabels: map[string]string{"gpu-test": "diag", gpulabels.Present: "true"}}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), "dp-diag-cpu-0")) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, "dp-diag-cpu-0"))

	config := testAccDevicePluginConfig("dp-diag", "diag", `
  timeouts {
    create = "15s"
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-diag", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			{
				Config: config,
				ExpectError: regexp.MustCompile(`Waited 15s \(timeouts.create\)\s+for\s+allocatable\s+nvidia.com/gpu\s+on\s+every\s+node\s+running\s+the\s+plugin.\s+` +
					`1\s+of\s+1\s+nodes\s+running\s+the\s+plugin\s+advertise\s+no\s+allocatable\s+nvidia.com/gpu:\s+` +
					`- dp-diag-cpu-0: allocatable nvidia.com/gpu 0, capacity 0; GPU Feature Discovery reports no GPU on it \(no nvidia.com/gpu.count label\); ` +
					`its plugin pod nvidia-device-plugin-\w+ is Running and ready, so the plugin found no NVIDIA GPU there`),
			},
			// What the create made is in the state, tainted: destroy
			// removes it, namespace included (CheckDestroy).
			expectTainted(config, devicePluginAddress),
		},
	})
}

func TestAccDevicePlugin_rolloutTimeoutDiagnosis(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "rollout", map[string]string{"dp-rollout-g5-0": "g5.xlarge"})
	// A g5.xlarge has 4 vCPUs: a plugin asking for 64 can never be scheduled.
	config := testAccDevicePluginConfig("dp-rollout", "rollout", `
  resources = {
    requests = { cpu = "64" }
  }
  timeouts {
    create = "10s"
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-rollout", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: regexp.MustCompile(`Waited 10s \(timeouts.create\)\s+for\s+DaemonSet\s+dp-rollout/nvidia-device-plugin\s+to\s+roll\s+out.\s+` +
				`DaemonSet\s+dp-rollout/nvidia-device-plugin\s+has\s+\d\s+of\s+1\s+pods\s+on\s+the\s+current\s+template\s+and\s+0\s+available:\s+` +
				`- dp-rollout-g5-0: pod nvidia-device-plugin-\w+ is Pending: Unschedulable: 0/\d+ nodes are available: 1 Insufficient cpu`),
		}},
	})
}

func TestAccDevicePlugin_existingDaemonSetIsNotTakenOver(t *testing.T) {
	testAccPreCheck(t)
	namespace := testNamespace(t, "dp-exists")
	labels := map[string]string{"app": "helm-installed-plugin"}
	_, err := cluster.Client().AppsV1().DaemonSets(namespace).Create(context.Background(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"gpu-test": "nothing"},
					Containers:   []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      testAccDevicePluginConfig(namespace, "nothing", ""),
			ExpectError: regexp.MustCompile(`(?s)DaemonSet dp-exists/nvidia-device-plugin already exists.*import it`),
		}},
	})
	ds, err := cluster.Client().AppsV1().DaemonSets(namespace).Get(context.Background(), "nvidia-device-plugin", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", ds.Spec.Template.Spec.Containers[0].Image, "the existing DaemonSet is untouched")
}

// TestAccDevicePlugin_examplesValidate plans the documented examples, so that
// they keep up with the schema. They are not applied: they select every GPU
// node, and the shared fleet must keep its GPUs for the inventory tests.
func TestAccDevicePlugin_examplesValidate(t *testing.T) {
	testAccPreCheck(t)
	for _, file := range []string{"resource.tf", "time-slicing.tf", "health-agent.tf"} {
		t.Run(file, func(t *testing.T) {
			example, err := os.ReadFile(filepath.Join("..", "..", "examples", "resources", "gpu_device_plugin", file))
			require.NoError(t, err)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:             providerConfig() + string(example),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
				}},
			})
		})
	}
}

package provider

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// testHealthAgentImage stands for a build of gpu-bootstrap: the testbed
// pulls nothing.
const testHealthAgentImage = "registry.example/gpu-bootstrap:dev"

// healthAgentArgs are the arguments of the agent's container now.
func healthAgentArgs(t *testing.T, namespace string) []string {
	t.Helper()
	ds, err := cluster.Client().AppsV1().DaemonSets(namespace).Get(context.Background(), "nvidia-device-plugin-health-agent", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"gpu-bootstrap"}, ds.Spec.Template.Spec.Containers[0].Command)
	require.Equal(t, testHealthAgentImage, ds.Spec.Template.Spec.Containers[0].Image)
	return ds.Spec.Template.Spec.Containers[0].Args
}

func TestAccDevicePlugin_healthAgentLifecycle(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "health", map[string]string{"dp-health-g5-0": "g5.xlarge"})
	const namespace = "dp-health"
	withAgent := func(body string) string {
		return testAccDevicePluginConfig(namespace, "health", fmt.Sprintf(`
  health_agent {
    image = %q
%s
  }
`, testHealthAgentImage, body))
	}
	agent := tfjsonpath.New("health_agent")
	clusterRoleExists := func() bool {
		_, err := cluster.Client().RbacV1().ClusterRoles().Get(context.Background(), namespace+":nvidia-device-plugin-health-agent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Create with the defaults: the agent runs gpuhealth's default settings.
			{
				Config: withAgent(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("daemonset"), knownvalue.StringExact("nvidia-device-plugin-health-agent")),
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("taint"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("damping_interval"), knownvalue.StringExact("1m")),
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("sample_interval"), knownvalue.StringExact("5s")),
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("port"), knownvalue.Int64Exact(9400)),
					statecheck.ExpectKnownValue(devicePluginAddress, agent.AtMapKey("fatal_faults"), knownvalue.SetExact([]knownvalue.Check{
						knownvalue.StringExact("xid_critical"), knownvalue.StringExact("gpu_lost"), knownvalue.StringExact("ecc_uncorrectable"),
						knownvalue.StringExact("row_remap_failure"), knownvalue.StringExact("device_count"),
					})),
				},
				Check: func(*terraform.State) error {
					require.Equal(t, gpuhealth.DefaultSettings().Args(), healthAgentArgs(t, namespace))
					require.True(t, clusterRoleExists())
					return nil
				},
			},
			// ImportState: the settings read back from the DaemonSet's arguments.
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           namespace + "/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			// Update in place: taint on, faster damping, fewer fatal classes; the arguments roll.
			{
				Config: withAgent(`
    taint            = true
    damping_interval = "30s"
    fatal_faults     = ["gpu_lost", "xid_critical"]
    expected_gpus    = 1
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					want := gpuhealth.DefaultSettings()
					want.Taint, want.Damping, want.ExpectedGPUs = true, 30*time.Second, 1
					want.Fatal = []gpuhealth.FaultClass{gpuhealth.ClassXIDCritical, gpuhealth.ClassGPULost}
					require.Equal(t, want.Args(), healthAgentArgs(t, namespace))
					return nil
				},
			},
			// The block removed: the agent's objects are deleted, the plugin stays.
			{
				Config: testAccDevicePluginConfig(namespace, "health", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, agent, knownvalue.Null()),
				},
				Check: func(*terraform.State) error {
					client := cluster.Client()
					_, err := client.AppsV1().DaemonSets(namespace).Get(context.Background(), "nvidia-device-plugin-health-agent", metav1.GetOptions{})
					require.True(t, apierrors.IsNotFound(err), "the agent's DaemonSet is gone: %v", err)
					_, err = client.CoreV1().ServiceAccounts(namespace).Get(context.Background(), "nvidia-device-plugin-health-agent", metav1.GetOptions{})
					require.True(t, apierrors.IsNotFound(err), "its ServiceAccount is gone: %v", err)
					require.False(t, clusterRoleExists(), "its ClusterRole is gone")
					_, err = client.AppsV1().DaemonSets(namespace).Get(context.Background(), "nvidia-device-plugin", metav1.GetOptions{})
					require.NoError(t, err)
					return nil
				},
			},
		},
	})
}

func TestAccDevicePlugin_healthAgentInvalidConfig(t *testing.T) {
	testAccPreCheck(t)
	invalid := func(body string) string {
		return providerConfig() + "resource \"gpu_device_plugin\" \"test\" {\n  health_agent {\n" + body + "\n  }\n}\n"
	}
	for _, step := range []struct{ name, body, want string }{
		{"an unknown fault class", `image = "x/y:1"
fatal_faults = ["xid_critical", "xid_79"]`,
			`(?s)health_agent.fatal_faults: "xid_79" is not a fault class.\s+Valid\s+values\s+are:\s+xid_critical,\s+xid_other,\s+gpu_lost`},
		{"a duration that is none", `image = "x/y:1"
damping_interval = "a minute"`, `(?s)health_agent.damping_interval "a minute" is not a duration`},
		{"a zero duration", `image = "x/y:1"
sample_interval = "0s"`, `(?s)health_agent.sample_interval "0s" is not positive`},
		{"a negative damping", `image = "x/y:1"
damping_interval = "-1m"`, `(?s)health_agent.damping_interval "-1m" is negative`},
		{"a fraction", `image = "x/y:1"
expected_gpus = 1.5`, `(?s)health_agent.expected_gpus must be a whole number`},
		{"a port out of range", `image = "x/y:1"
port = 70000`, `(?s)health_agent.port value must be between 1 and 65535`},
		{"no image", ``, `(?s)health_agent.image is required: no image of gpu-bootstrap is published`},
	} {
		t.Run(step.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      invalid(step.body),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(step.want),
				}},
			})
		})
	}
}

// The agent's ClusterRole can be granted only by an identity that holds
// its rules: the documented ClusterRole for gpu_device_plugin does.
func TestAccCompatibility_documentedRBACIsEnoughForTheHealthAgent(t *testing.T) {
	testAccPreCheck(t)
	token := tokenWithDocumentedRoles(t, "terraform-documented-health", "terraform-gpu-device-plugin")
	devicePluginTestNodes(t, "rbac-health", map[string]string{"dp-rbac-health-g5-0": "g5.xlarge"})
	config := fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host                   = %q
    cluster_ca_certificate = %q
    token                  = %q
  }
}

resource "gpu_device_plugin" "test" {
  namespace     = "dp-rbac-health"
  node_selector = { "gpu-test" = "rbac-health" }
  health_agent {
    image = %q
    taint = true
  }
}
`, cluster.APIServerURL(), cluster.RESTConfig().CAData, token, testHealthAgentImage)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-rbac-health", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			PreConfig: withEnvironment(t, nil),
			Config:    config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("health_agent").AtMapKey("daemonset"),
					knownvalue.StringExact("nvidia-device-plugin-health-agent")),
			},
		}},
	})
}

func TestHealthAgentDurationSpelling(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 5 * time.Second: "5s", 90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m", 0: "0s",
	} {
		require.Equal(t, want, shortDuration(d))
		parsed, err := time.ParseDuration(want)
		require.NoError(t, err)
		require.Equal(t, d, parsed, "%s reads back as written", want)
	}
	require.Equal(t, "60s", keepDurationSpelling(time.Minute, types.StringValue("60s")).ValueString(), "the configuration's spelling of the same time stays")
	require.Equal(t, "30s", keepDurationSpelling(30*time.Second, types.StringValue("60s")).ValueString(), "a changed time is the cluster's")
	require.Equal(t, "1m", keepDurationSpelling(time.Minute, types.StringNull()).ValueString(), "an import spells it shortest")
}

// The apply returns once every node the agent runs on reports its
// condition, from the real agent the testbed's health-agent simulator runs
// for each agent pod over the node's NVML double; what the condition says
// is no drift of the resource.
func TestAccDevicePlugin_healthAgentReadyWhenEveryNodeReports(t *testing.T) {
	testAccPreCheck(t)
	nodes := map[string]string{"dp-ready-g5-0": "g5.xlarge", "dp-ready-g4dn-0": "g4dn.12xlarge"}
	devicePluginTestNodes(t, "health-ready", nodes)
	for node := range nodes {
		n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		require.NoError(t, err)
		require.False(t, gpuhealth.ReadNode(n).Reported, "%s reports before any agent runs", node)
	}
	config := testAccDevicePluginConfig("dp-health-ready", "health-ready", fmt.Sprintf(`
  health_agent {
    image = %q
  }
`, testHealthAgentImage))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-health-ready", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				for node := range nodes {
					n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
					require.NoError(t, err)
					health := gpuhealth.ReadNode(n)
					require.True(t, health.Reported, "%s reports its condition when the apply returns", node)
					require.Equal(t, corev1.ConditionTrue, health.Status, "%s: %s %s", node, health.Reason, health.Message)
					require.Equal(t, gpuhealth.ReasonReady, health.Reason)
				}
				return nil
			},
		}, {
			// The nodes' conditions are no drift of the deployment.
			Config:   config,
			PlanOnly: true,
		}},
	})
}

// A create whose ClusterRoleBinding for the agent is made but whose answer
// is lost leaves nothing behind, cluster-wide objects included: the
// binding is found by its owner marker and deleted with the rest.
func TestAccDevicePlugin_healthAgentCreateWhoseAnswerIsLostLeavesNothingBehind(t *testing.T) {
	testAccPreCheck(t)
	namespace := testNamespace(t, "dp-health-lost")
	block, dropped := answerDroppingProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/clusterrolebindings")
	})
	config := block + fmt.Sprintf(`
resource "gpu_device_plugin" "test" {
  namespace     = %q
  node_selector = { "gpu-test" = "health-lost" }
  health_agent {
    image = %q
  }
}
`, namespace, testHealthAgentImage)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", false),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`creating ClusterRoleBinding ` + namespace + `:nvidia-device-plugin-health-agent`),
		}},
	})
	require.True(t, dropped.Load(), "the binding's create went through the proxy")
	ctx := context.Background()
	client := cluster.Client()
	name := namespace + ":nvidia-device-plugin-health-agent"
	_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the binding whose answer was lost is gone: %v", err)
	_, err = client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the ClusterRole made before it is gone: %v", err)
	_, err = client.CoreV1().ServiceAccounts(namespace).Get(ctx, "nvidia-device-plugin-health-agent", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the ServiceAccount made before it is gone: %v", err)
}

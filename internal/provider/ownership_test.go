package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// Ownership under misuse, with the real Terraform CLI: a destroy never
// deletes what its resource did not create, two resources never manage one
// object, and nothing a failed apply created is missing from the state.

// deletedNamespaceOnCleanup deletes namespace when the test ends, whoever
// left it.
func deletedNamespaceOnCleanup(t *testing.T, namespace string) {
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	})
}

func TestAccDevicePlugin_destroyKeepsWhatOthersPutInItsNamespace(t *testing.T) {
	testAccPreCheck(t)
	const ns = "dp-own-keep"
	deletedNamespaceOnCleanup(t, ns)
	config := func(extra string) string {
		return testAccDevicePluginConfig(ns, "own-keep-none", `
  wait_for_rollout     = false
  wait_for_allocatable = false
`+extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(""),
				Check: func(*terraform.State) error {
					// A user adds their NGC pull secret to the namespace Terraform made.
					_, err := cluster.Client().CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
						ObjectMeta: metav1.ObjectMeta{Name: "ngc-pull"}, Type: corev1.SecretTypeDockerConfigJson,
						Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"nvcr.io":{}}}`)},
					}, metav1.CreateOptions{})
					return err
				},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			ctx := context.Background()
			if _, err := cluster.Client().CoreV1().Secrets(ns).Get(ctx, "ngc-pull", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("the user's Secret did not survive the destroy: %w", err)
			}
			if err := testAccDevicePluginDestroyed(ns, "nvidia-device-plugin", false)(nil); err != nil {
				return err
			}
			_, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "nvidia-device-plugin-config", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("the plugin's own ConfigMap is still there (err %v)", err)
			}
			return nil
		},
	})
}

func TestAccDevicePlugin_optInDeletesNamespaceWithContents(t *testing.T) {
	testAccPreCheck(t)
	const ns = "dp-own-force"
	deletedNamespaceOnCleanup(t, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccDevicePluginConfig(ns, "own-force-none", `
  wait_for_rollout              = false
  wait_for_allocatable          = false
  delete_namespace_if_not_empty = true
`),
			Check: func(*terraform.State) error {
				_, err := cluster.Client().CoreV1().ConfigMaps(ns).Create(context.Background(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}, metav1.CreateOptions{})
				return err
			},
		}},
		CheckDestroy: testAccDevicePluginDestroyed(ns, "nvidia-device-plugin", true),
	})
}

func TestAccDevicePlugin_twoResourcesOneDaemonSet(t *testing.T) {
	testAccPreCheck(t)
	const ns = "dp-own-two"
	deletedNamespaceOnCleanup(t, ns)
	plugin := func(address, image string) string {
		return fmt.Sprintf(`
resource "gpu_device_plugin" %q {
  namespace            = %q
  node_selector        = { "gpu-test" = "own-two-none" }
  image                = %q
  wait_for_rollout     = false
  wait_for_allocatable = false
}
`, address, ns, image)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig() + plugin("a", kube.DefaultDevicePluginImage) + plugin("b", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
			// One of the two creates wins; the other is refused, with the
			// import hint, and is not in the state.
			ExpectError: wrapped("already exists", "terraform import"),
		}},
		// The winner is destroyed; the loser left nothing behind. (Either
		// may have made the namespace: it goes with the winner when the
		// winner made it, and stays, with a warning, when the loser did.)
		CheckDestroy: func(*terraform.State) error {
			ctx := context.Background()
			if _, err := cluster.Client().AppsV1().DaemonSets(ns).Get(ctx, "nvidia-device-plugin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DaemonSet %s/nvidia-device-plugin is still there after destroy (err %v)", ns, err)
			}
			if _, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(ctx, "nvidia-device-plugin-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("ConfigMap %s/nvidia-device-plugin-config is still there after destroy (err %v)", ns, err)
			}
			return nil
		},
	})
}

func TestAccWorkload_twoDeploymentsOneName(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-own-two")
	deployment := func(address string, replicas int) string {
		return fmt.Sprintf(`
resource "gpu_workload" %q {
  kind = "deployment"
  metadata {
    name      = "serve"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/tritonserver:24.05-py3"
  }
  gpu {
    count = 1
  }
  deployment {
    replicas = %d
  }
  wait_for_rollout = false
}
`, address, ns, replicas)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      providerConfig() + deployment("a", 1) + deployment("b", 2),
			ExpectError: wrapped("Deployment", ns+"/serve already exists", "terraform import"),
		}},
		// No orphan: the Deployment that was made is in the state, and
		// destroyed with it.
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_replacedOutOfBandIsNotDestroyed(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-own-replaced")
	config := testAccWorkloadDeploymentConfig(ns, "serve", "nvcr.io/nvidia/tritonserver:24.05-py3", 1, "    count = 1")
	var foreignUID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				// Someone deletes the Deployment and makes their own of the
				// same name. It is not adopted: the next apply is refused
				// with the import hint, and the destroy leaves it.
				PreConfig: func() {
					ctx := context.Background()
					deps := cluster.Client().AppsV1().Deployments(ns)
					require.NoError(t, deps.Delete(ctx, "serve", metav1.DeleteOptions{}))
					dep := &appsv1.Deployment{
						ObjectMeta: metav1.ObjectMeta{Name: "serve", Labels: map[string]string{"app": "theirs"}},
						Spec: appsv1.DeploymentSpec{
							Replicas: ptr.To[int32](0),
							Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
							Template: corev1.PodTemplateSpec{
								ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
								Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
							},
						},
					}
					created, err := deps.Create(ctx, dep, metav1.CreateOptions{})
					require.NoError(t, err)
					foreignUID = string(created.UID)
				},
				Config:      config,
				ExpectError: wrapped("Deployment", ns+"/serve already exists", "terraform import"),
			},
		},
		CheckDestroy: func(*terraform.State) error {
			dep, err := cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), "serve", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("the Deployment someone else made was deleted by the destroy: %w", err)
			}
			if string(dep.UID) != foreignUID || dep.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
				return fmt.Errorf("the Deployment someone else made was changed: uid %s, image %s", dep.UID, dep.Spec.Template.Spec.Containers[0].Image)
			}
			return nil
		},
	})
}

package provider

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// An apply never leaves an object of gpu_device_plugin on the cluster
// without the resource in the state: a create that fails part-way removes
// what it made, and a create whose objects stay is kept, tainted, so that
// destroy removes them.

func TestAccDevicePlugin_createWhoseAnswerIsLostLeavesNothingBehind(t *testing.T) {
	testAccPreCheck(t)
	// A namespace that was there before: the create does not delete it.
	namespace := testNamespace(t, "dp-lost-answer")
	// The API server creates the plugin's DaemonSet; its answer is lost.
	block, dropped := answerDroppingProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/namespaces/"+namespace+"/daemonsets")
	})
	config := block + `
resource "gpu_device_plugin" "test" {
  namespace     = "` + namespace + `"
  node_selector = { "gpu-test" = "lost-answer" }
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// Runs only when the failed create left the resource in the state.
		CheckDestroy: testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", false),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`creating DaemonSet ` + namespace + `/nvidia-device-plugin`),
		}},
	})
	require.True(t, dropped.Load(), "the DaemonSet's create went through the proxy")
	// With nothing in the state there is nothing to destroy: whatever is
	// on the cluster now, the failed create left there.
	require.NoError(t, testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", false)(nil))
	_, err := cluster.Client().CoreV1().ConfigMaps(namespace).Get(context.Background(), "nvidia-device-plugin-config", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the ConfigMap made before the DaemonSet is gone too: %v", err)
}

func TestAccDevicePlugin_createInterruptedKeepsItTainted(t *testing.T) {
	testAccPreCheck(t)
	// A CPU node that says it has a GPU: the plugin runs there, finds none,
	// and the apply waits for allocatable GPUs.
	ctx := context.Background()
	require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: "dp-interrupt-cpu-0", InstanceType: instanceType(t, "m5.xlarge"),
		ExtraLabels: map[string]string{"gpu-test": "interrupt", gpulabels.Present: "true"}}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), "dp-interrupt-cpu-0")) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, "dp-interrupt-cpu-0"))

	config := testAccDevicePluginConfig("dp-interrupt", "interrupt", "")
	var interrupted *atomic.Bool
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-interrupt", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Ctrl-C once the create is done: the DaemonSet, its last
			// object, has its fields under server-side apply, the create's
			// last request.
			{
				PreConfig: func() {
					w, err := cluster.Client().AppsV1().DaemonSets("dp-interrupt").Watch(t.Context(),
						metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "nvidia-device-plugin").String()})
					require.NoError(t, err)
					interrupted = interruptTerraformOnce(t, w, func(e watch.Event) bool {
						ds, ok := e.Object.(*appsv1.DaemonSet)
						return ok && slices.ContainsFunc(ds.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
							return f.Manager == kube.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply
						})
					})
				},
				Config:      config,
				ExpectError: wrapped("creating NVIDIA device plugin (dp-interrupt/nvidia-device-plugin)"),
			},
			expectTainted(config, devicePluginAddress),
		},
	})
	require.True(t, interrupted.Load(), "Terraform was interrupted")
}

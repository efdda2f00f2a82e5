package provider

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

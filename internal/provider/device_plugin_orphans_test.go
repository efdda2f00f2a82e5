package provider

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An apply never leaves an object of gpu_device_plugin on the cluster
// without the resource in the state: a create that fails part-way removes
// what it made, and a create whose objects stay is kept, tainted, so that
// destroy removes them.

func TestAccDevicePlugin_createWhoseAnswerIsLostLeavesNothingBehind(t *testing.T) {
	testAccPreCheck(t)
	const namespace = "dp-lost-answer"
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	})
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
		// Nothing is in the state, so destroy deletes nothing: whatever
		// is left there, the create left.
		CheckDestroy: testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`creating DaemonSet ` + namespace + `/nvidia-device-plugin`),
		}},
	})
	require.True(t, dropped.Load(), "the DaemonSet's create went through the proxy")
	_, err := cluster.Client().CoreV1().ConfigMaps(namespace).Get(context.Background(), "nvidia-device-plugin-config", metav1.GetOptions{})
	require.Error(t, err, "the ConfigMap made before the DaemonSet is gone too")
}

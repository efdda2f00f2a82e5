package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The inputs issue 12's tester got through plan, each now refused at plan
// by the real Terraform CLI: a fraction in an integer, an image reference
// the kubelet cannot parse, a timeout that is not a positive duration,
// annotations over Kubernetes' size limit and more sharing replicas than
// a node can advertise. Every case asserts the error's text, which names
// the attribute, and the configuration line Terraform quotes with it,
// which proves the error is attached to that attribute; each test then
// checks that the rejected applies created nothing on the cluster.

// rejectedWorkload is a gpu_workload in namespace with the parts a case
// changes: the kind, extra metadata lines, the image, the gpu block's body
// and extra top-level lines.
type rejectedWorkload struct {
	kind, metadata, image, gpu, extra string
}

func (w rejectedWorkload) config(namespace string) string {
	if w.kind == "" {
		w.kind = "job"
	}
	if w.image == "" {
		w.image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
	}
	if w.gpu == "" {
		w.gpu = "count = 1"
	}
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "test" {
  kind = %q
  metadata {
    name      = "rejected"
    namespace = %q
%s
  }
  container {
    image = %q
  }
  gpu {
    %s
  }
%s
}
`, w.kind, namespace, w.metadata, w.image, w.gpu, w.extra)
}

// rejectedSteps are apply steps (not plan-only: an apply is attempted) that
// must each fail with an error matching their regexp.
func rejectedSteps(cases []struct {
	config string
	want   *regexp.Regexp
}) []resource.TestStep {
	var steps []resource.TestStep
	for _, c := range cases {
		steps = append(steps, resource.TestStep{Config: c.config, ExpectError: c.want})
	}
	return steps
}

// requireNothingCreated fails unless namespace holds no Job, Deployment
// or pod: every apply of the test was refused before reaching the cluster.
func requireNothingCreated(t *testing.T, namespace string) {
	t.Helper()
	require.NoError(t, testAccCheckWorkloadsGone(namespace)(nil))
}

func TestAccWorkload_invalidInputRejectedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "rejected-at-plan")
	// 64 values of 4 KiB and their keys: 263350 bytes, over 252 KiB.
	bigAnnotations := `annotations = { for i in range(64) : "example.com/blob-${i}" => join("", [for j in range(64) : "` + strings.Repeat("x", 64) + `"]) }`
	cases := []struct {
		config string
		want   *regexp.Regexp
	}{
		{rejectedWorkload{gpu: "count = 1.5"}.config(ns),
			wrapped("Not a whole number", "count = 1.5", "gpu.count must be a whole number: 1.5 has a fraction. Write 1 or 2.")},
		{rejectedWorkload{gpu: "count = 1e30"}.config(ns),
			wrapped("Not a whole number", "count = 1e30", "gpu.count must be a whole number: 1e+30 is outside the 64-bit range")},
		{rejectedWorkload{gpu: "count = 1\n    min_memory_gib = 79.5"}.config(ns),
			wrapped("Not a whole number", "min_memory_gib = 79.5", "gpu.min_memory_gib must be a whole number: 79.5 has a fraction. Write 79 or 80.")},
		{rejectedWorkload{extra: "job {\n    backoff_limit = 2.5\n  }"}.config(ns),
			wrapped("Not a whole number", "backoff_limit = 2.5", "job.backoff_limit must be a whole number")},
		{rejectedWorkload{kind: "deployment", extra: "deployment {\n    replicas = 0.5\n  }"}.config(ns),
			wrapped("Not a whole number", "replicas = 0.5", "deployment.replicas must be a whole number: 0.5 has a fraction. Write 0 or 1.")},
		{rejectedWorkload{extra: `tolerations = [{ key = "spot", operator = "Exists", effect = "NoExecute", toleration_seconds = 30.5 }]`}.config(ns),
			wrapped("Not a whole number", "tolerations[0].toleration_seconds must be a whole number: 30.5 has a fraction")},
		{rejectedWorkload{image: "nvcr.io/nvidia/pytorch: 24.05-py3"}.config(ns),
			wrapped("Invalid image reference", `image = "nvcr.io/nvidia/pytorch: 24.05-py3"`,
				`container.image "nvcr.io/nvidia/pytorch: 24.05-py3" is not an image reference a kubelet can pull: it contains whitespace at character 24`)},
		{rejectedWorkload{image: "nvcr.io/NVIDIA/pytorch:24.05-py3"}.config(ns),
			wrapped("Invalid image reference", `container.image "nvcr.io/NVIDIA/pytorch:24.05-py3"`, "repository name (NVIDIA/pytorch) must be lowercase")},
		{rejectedWorkload{extra: "timeouts {\n    create = \"-5m\"\n  }"}.config(ns),
			wrapped("Invalid duration", `create = "-5m"`, `timeouts.create "-5m" is not positive`)},
		{rejectedWorkload{extra: "timeouts {\n    update = \"0s\"\n  }"}.config(ns),
			wrapped("Invalid duration", `update = "0s"`, `timeouts.update "0s" is not positive`)},
		{rejectedWorkload{extra: "timeouts {\n    delete = \"soon\"\n  }"}.config(ns),
			wrapped("Invalid duration", `delete = "soon"`, `timeouts.delete "soon" is not a duration`)},
		{rejectedWorkload{extra: "timeouts {\n    read = \"5m\"\n  }"}.config(ns),
			wrapped(`An argument named "read" is not expected here`)},
		{rejectedWorkload{metadata: "    " + bigAnnotations}.config(ns),
			wrapped("Annotations too large", "annotations = {", "metadata.annotations holds 263350 bytes of keys and values, more than 258048 (252 KiB)")},
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: rejectedSteps(cases)})
	requireNothingCreated(t, ns)
}

func TestAccDevicePlugin_invalidInputRejectedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	const ns = "dp-rejected-at-plan"
	plugin := func(body string) string { return testAccDevicePluginConfig(ns, "rejected", body) }
	cases := []struct {
		config string
		want   *regexp.Regexp
	}{
		{plugin("config {\n  time_slicing {\n    resource {\n      replicas = 10000\n    }\n  }\n}"),
			wrapped("Too many replicas", "replicas = 10000", "config.time_slicing.resource[0].replicas = 10000 is more than time_slicing supports: at most 512", "4 MiB gRPC message")},
		{plugin("config {\n  mps {\n    resource {\n      replicas = 101\n    }\n  }\n}"),
			wrapped("Too many replicas", "replicas = 101", "config.mps.resource[0].replicas = 101 is more than mps supports: at most 100")},
		{plugin("config {\n  time_slicing {\n    resource {\n      replicas = 2.5\n    }\n  }\n}"),
			wrapped("Not a whole number", "replicas = 2.5", "config.time_slicing.resource[0].replicas must be a whole number: 2.5 has a fraction. Write 2 or 3.")},
		{plugin("dcgm_exporter {\n  port = 9400.5\n}"),
			wrapped("Not a whole number", "port = 9400.5", "dcgm_exporter.port must be a whole number")},
		{plugin(`image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0 "`),
			wrapped("Invalid image reference", `image "nvcr.io/nvidia/k8s-device-plugin:v0.17.0 " is not an image reference a kubelet can pull: it contains whitespace at character 41`)},
		{plugin("gpu_feature_discovery {\n  image = \"nvcr.io/nvidia/gpu feature discovery:v0.8.2\"\n}"),
			wrapped("Invalid image reference", `gpu_feature_discovery.image "nvcr.io/nvidia/gpu feature discovery:v0.8.2"`, "whitespace at character 19")},
		{plugin("dcgm_exporter {\n  image = \"nvcr.io/nvidia/k8s/dcgm-exporter:\"\n}"),
			wrapped("Invalid image reference", `dcgm_exporter.image "nvcr.io/nvidia/k8s/dcgm-exporter:"`, "invalid reference format")},
		{plugin("timeouts {\n  create = \"-5m\"\n}"),
			wrapped("Invalid duration", `create = "-5m"`, `timeouts.create "-5m" is not positive`)},
		{plugin("timeouts {\n  delete = \"0\"\n}"),
			wrapped("Invalid duration", `delete = "0"`, `timeouts.delete "0" is not positive`)},
		{plugin("timeouts {\n  update = \"ten minutes\"\n}"),
			wrapped("Invalid duration", `timeouts.update "ten minutes" is not a duration`)},
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: rejectedSteps(cases)})
	// The plugin creates its namespace first: that it does not exist shows
	// no apply got anywhere.
	_, err := cluster.Client().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace %s exists after only rejected applies (err %v)", ns, err)
}

func TestAccInventoryDataSource_fractionRejectedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source = "kubernetes"
  filter {
    min_free_gpus = 0.5
  }
}
`,
			ExpectError: wrapped("Not a whole number", "min_free_gpus = 0.5", "filter.min_free_gpus must be a whole number: 0.5 has a fraction. Write 0 or 1."),
		}},
	})
}

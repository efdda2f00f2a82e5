package testbed

// The versions of the binaries the testbed runs and of the CLIs the
// acceptance tests drive. tools/kube/go.mod and tools/tofu/go.mod pin the same
// Kubernetes and OpenTofu versions (unit tests check it).
const (
	KubernetesVersion = "v1.31.4"
	KwokVersion       = "v0.6.1"
	TerraformVersion  = "v1.5.7"
	TofuVersion       = "v1.11.0"
)

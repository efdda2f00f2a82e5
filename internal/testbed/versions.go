package testbed

// The versions of the binaries the testbed runs. tools/kube/go.mod pins the
// same Kubernetes version (a unit test checks it).
const (
	KubernetesVersion = "v1.31.4"
	KwokVersion       = "v0.6.1"
	TerraformVersion  = "v1.5.7"
)

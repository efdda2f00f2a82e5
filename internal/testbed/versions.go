package testbed

// The versions of the binaries the testbed runs, of the CLIs the acceptance
// tests drive, and of Packer, which validates examples/packer.
// tools/kube/go.mod, tools/tofu/go.mod and tools/packer/go.mod pin the same
// Kubernetes, OpenTofu and Packer versions (unit tests check it).
const (
	KubernetesVersion = "v1.37.2"
	// OldestKubernetesVersion is the oldest minor the provider supports: the
	// oldest still in EKS standard support on 2026-11-26 (1.34, until
	// 2026-12-02). tools/kube-oldest pins it; CI runs the Kubernetes
	// acceptance tests against it too.
	OldestKubernetesVersion = "v1.34.4"
	KwokVersion             = "v0.8.0"
	TerraformVersion        = "v1.5.7"
	TofuVersion             = "v1.11.0"
	// PackerVersion is the last MPL-licensed Packer; it still bundles the
	// amazon plugin, so amazon-ebs templates validate without `packer init`.
	PackerVersion = "v1.9.4"
)

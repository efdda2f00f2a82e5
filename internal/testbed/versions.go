package testbed

// The versions of the binaries the testbed runs, of the CLIs the acceptance
// tests drive, and of Packer, which validates examples/packer.
// tools/kube/go.mod, tools/tofu/go.mod and tools/packer/go.mod pin the same
// Kubernetes, OpenTofu and Packer versions (unit tests check it).
const (
	KubernetesVersion = "v1.31.4"
	KwokVersion       = "v0.6.1"
	TerraformVersion  = "v1.5.7"
	TofuVersion       = "v1.11.0"
	// PackerVersion is the last MPL-licensed Packer; it still bundles the
	// amazon plugin, so amazon-ebs templates validate without `packer init`.
	PackerVersion = "v1.9.4"
)

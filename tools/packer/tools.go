//go:build tools

// Package packer pins the Packer CLI that `make validate-examples` runs on
// examples/packer. It is a module of its own so that neither the provider nor
// the other tools modules depend on Packer's dependency tree. Packer v1.9.4 is
// the last MPL-licensed release, and it still bundles the amazon plugin
// (amazon-ebs), so its templates validate without `packer init`.
package packer

import (
	_ "github.com/hashicorp/packer"
)

//go:build tools

// Package tools pins the documentation generator, tfplugindocs, in a module
// of its own so that doc tooling never enters the provider's dependencies.
// scripts/generate-docs.sh runs it with `go -C tools run`.
package tools

import (
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
)

//go:build tools

// Package tofu pins the OpenTofu CLI that the acceptance tests also run
// against (make testacc-tofu). It is a module of its own because OpenTofu's
// go.mod replaces hcl/v2 with its fork, and a replace only applies in the
// main module.
package tofu

import (
	_ "github.com/opentofu/opentofu/cmd/tofu"
)

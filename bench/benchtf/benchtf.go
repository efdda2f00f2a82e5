// Package benchtf is what the bench programs share to run the Terraform CLI
// on a provider they have just built: the build, and the CLI configuration
// whose dev_overrides make Terraform run that build (no init, no registry).
package benchtf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CLIConfigName is the file WriteDevOverrides writes in a configuration
// directory; TF_CLI_CONFIG_FILE names it.
const CLIConfigName = "terraformrc"

// WriteDevOverrides writes dir/terraformrc, which points gpuinfra/gpu at
// the provider binary in pluginDir.
func WriteDevOverrides(dir, pluginDir string) error {
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"gpuinfra/gpu\" = %q\n  }\n  direct {}\n}\n", pluginDir)
	return os.WriteFile(filepath.Join(dir, CLIConfigName), []byte(rc), 0o644)
}

// BuildProvider builds the provider of the module in the working directory
// into out, with env added to the go command's environment; the go
// command's output goes to this process's.
func BuildProvider(ctx context.Context, out string, env ...string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	build.Env = append(os.Environ(), env...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the provider: %w", err)
	}
	return nil
}

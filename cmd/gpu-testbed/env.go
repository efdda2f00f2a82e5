package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// runEnv prints `export` lines for a shell's eval: every backend's Env,
// as the running testbed recorded it (the Kubernetes backend's says which
// release it runs, in GPU_TESTBED_KUBERNETES). With --terraform-path it prints only
// the path of the cached Terraform CLI (--tofu-path: OpenTofu,
// --packer-path: Packer), running testbed or not.
func runEnv(_ context.Context, args []string) error {
	flags := flag.NewFlagSet("env", flag.ContinueOnError)
	dirArg := dirFlag(flags)
	terraformPath := flags.Bool("terraform-path", false, "print the path of the cached Terraform CLI and nothing else")
	tofuPath := flags.Bool("tofu-path", false, "print the path of the cached OpenTofu CLI and nothing else")
	packerPath := flags.Bool("packer-path", false, "print the path of the cached Packer CLI and nothing else")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *packerPath {
		path, err := testbed.PackerPath()
		if err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	}
	if *terraformPath {
		path, err := testbed.TerraformPath()
		if err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	}
	if *tofuPath {
		bins, err := testbed.Binaries()
		if err != nil {
			return err
		}
		fmt.Println(bins.Tofu)
		return nil
	}
	state, err := runningTestbed(*dirArg)
	if err != nil {
		return err
	}
	fmt.Print(exports(state.Env))
	return nil
}

// exports are `export NAME='value'` lines, sorted by name.
func exports(env map[string]string) string {
	var lines strings.Builder
	for _, name := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&lines, "export %s=%s\n", name, shellQuote(env[name]))
	}
	return lines.String()
}

// runningTestbed is the state of the live testbed in --dir.
func runningTestbed(dirArg string) (testbed.State, error) {
	dir, err := testbedDir(dirArg)
	if err != nil {
		return testbed.State{}, err
	}
	state, found, err := testbed.ReadState(dir)
	if err != nil {
		return testbed.State{}, err
	}
	if !found || !state.Ready || len(state.Running()) != len(state.Processes) {
		return testbed.State{}, fmt.Errorf("no testbed running in %s; start one with `gpu-testbed up%s`", dir, dirSuffix(dirArg))
	}
	return state, nil
}

// shellQuote quotes s for POSIX shells.
func shellQuote(s string) string {
	quoted := "'"
	for _, r := range s {
		if r == '\'' {
			quoted += `'\''`
		} else {
			quoted += string(r)
		}
	}
	return quoted + "'"
}

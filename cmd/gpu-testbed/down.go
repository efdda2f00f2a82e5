package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

const downTimeout = 15 * time.Second

func runDown(_ context.Context, args []string) error {
	flags := flag.NewFlagSet("down", flag.ContinueOnError)
	dirArg := dirFlag(flags)
	if err := flags.Parse(args); err != nil {
		return err
	}
	dir, err := testbedDir(*dirArg)
	if err != nil {
		return err
	}
	state, found, err := testbed.ReadState(dir)
	if err != nil {
		return err
	}
	if !found {
		fmt.Printf("no testbed recorded in %s\n", dir)
		return nil
	}
	running := len(state.Running())
	if err := state.Stop(downTimeout); err != nil {
		return fmt.Errorf("stopping the testbed: %w", err)
	}
	if err := testbed.RemoveFiles(dir); err != nil {
		return fmt.Errorf("removing the testbed files: %w", err)
	}
	fmt.Printf("testbed in %s stopped (%d processes) and removed\n", dir, running)
	return nil
}

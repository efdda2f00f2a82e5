package main

import (
	"context"
	"os"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// runServeProxmox runs the Proxmox VE emulator of a detached testbed in
// the foreground; `up` starts it in the background with the flags it
// needs, and `down` stops it with the rest of the testbed.
func runServeProxmox(ctx context.Context, args []string) error {
	if err := pveemu.Serve(ctx, args, os.Stderr); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

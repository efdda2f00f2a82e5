package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The flags are checked before any testbed is looked for.
func TestGPUFaultFlags(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.ErrorContains(t, runGPUFault(ctx, []string{"--dir", dir, "--xid", "79"}), "needs --node")
	require.ErrorContains(t, runGPUFault(ctx, []string{"--dir", dir, "--node", "gpu-p5-0", "--gpu", "3"}), "give one of --xid N, --lose, --recover")
	require.ErrorContains(t, runGPUFault(ctx, []string{"--dir", dir, "--node", "gpu-p5-0", "--xid", "79", "--lose"}), "exactly one of")
	require.ErrorContains(t, runGPUFault(ctx, []string{"--dir", dir, "--node", "gpu-p5-0", "--gpu", "3", "--xid", "79"}), "no testbed running in "+dir)
}

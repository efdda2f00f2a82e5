package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInstallFlags(t *testing.T) {
	tests := []struct {
		description string
		args        []string
		only        []string
		jobs        int
	}{
		{description: "no flag builds everything (make testbed)", args: nil, only: nil, jobs: 0},
		{description: "--only demo (make demo)", args: []string{"--only", "demo"}, only: []string{"demo"}},
		{description: "a comma-separated list of builds", args: []string{"--only=tofu,packer", "--jobs", "1"}, only: []string{"tofu", "packer"}, jobs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			opts, err := parseInstallFlags(tt.args)
			require.NoError(t, err)
			require.Equal(t, tt.only, opts.Only)
			require.Equal(t, tt.jobs, opts.Jobs)
			require.Equal(t, "tools", opts.ToolsDir)
		})
	}
}

// An unknown --only value fails before anything is built, naming the valid ones.
func TestInstallRejectsAnUnknownBuild(t *testing.T) {
	t.Setenv("GPU_TESTBED_CACHE", t.TempDir())
	err := run(context.Background(), []string{"install", "--tools-dir", "../../tools", "--only", "demo,opentofu"})
	require.ErrorContains(t, err, `unknown build "opentofu"`)
	require.ErrorContains(t, err, "kube, kube-oldest, terraform, kwok, tofu, packer")
}

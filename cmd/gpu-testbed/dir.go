package main

import (
	"flag"
	"path/filepath"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// dirFlag adds --dir, the directory a detached testbed lives in.
func dirFlag(flags *flag.FlagSet) *string {
	return flags.String("dir", "", "testbed directory (default <cache>/testbed, see GPU_TESTBED_CACHE)")
}

// testbedDir resolves --dir, defaulting to <cache root>/testbed.
func testbedDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	root, err := testbed.CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testbed"), nil
}

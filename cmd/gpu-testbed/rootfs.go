package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/debroot"
)

// runRootfs extracts a fresh Debian root (built once with debootstrap and
// cached, see internal/testbed/debroot) for shell scripts such as .ci/run.
func runRootfs(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("rootfs", flag.ContinueOnError)
	suite := flags.String("suite", "bookworm", "Debian suite: trixie (Debian 13), bookworm (Debian 12) or bullseye (Debian 11)")
	arch := flags.String("arch", "amd64", "architecture: amd64, or arm64 (second stage under qemu-user)")
	variant := flags.String("variant", "minbase", "debootstrap --variant")
	include := flags.String("include", "", "extra packages, comma-separated (e.g. ca-certificates,curl)")
	mirror := flags.String("mirror", "", "Debian mirror to build the root from (http:, https: or file: URL; default $"+debroot.MirrorEnv+", else the machine's own apt sources); used only when the root is not cached yet")
	dir := flags.String("dir", "", "directory to extract the root into (required)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("rootfs: --dir is required: the directory to extract the root into")
	}
	spec := debroot.Spec{Suite: *suite, Arch: *arch, Variant: *variant, Mirror: *mirror}
	if *include != "" {
		spec.Include = strings.Split(*include, ",")
	}
	if err := debroot.Extract(ctx, spec, *dir); err != nil {
		return err
	}
	fmt.Println(*dir)
	return nil
}

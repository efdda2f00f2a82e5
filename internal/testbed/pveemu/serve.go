package pveemu

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// serveFlags are the flags Start gives Options.Command: everything Serve
// needs to be the emulator Start set up.
func (e *Emulator) serveFlags() []string {
	return []string{
		"--dir", e.st.dir,
		"--port", strconv.Itoa(e.port),
		"--ca-file", e.caFile,
		"--task-duration", e.opts.TaskDuration.String(),
	}
}

// Serve runs the emulator in the foreground with the flags Start passes
// Options.Command, until ctx ends: the body of `gpu-testbed serve-proxmox`.
func Serve(ctx context.Context, args []string, log io.Writer) error {
	flags := flag.NewFlagSet("serve-proxmox", flag.ContinueOnError)
	dir := flags.String("dir", "", "the emulator's directory (its serving certificate and key)")
	port := flags.Int("port", 0, "the loopback port to serve the API on")
	caFile := flags.String("ca-file", "", "the testbed CA certificate (for PM_CA_CERT_FILE)")
	taskDuration := flags.Duration("task-duration", 200*time.Millisecond, "how long each task runs")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *port == 0 || *caFile == "" {
		return errors.New("serve-proxmox needs --dir, --port and --ca-file (gpu-testbed up passes them)")
	}
	e := New(Options{TaskDuration: *taskDuration})
	e.st.dir = *dir
	e.port = *port
	e.caFile = *caFile
	certPEM, err := os.ReadFile(filepath.Clean(e.certFile()))
	if err != nil {
		return fmt.Errorf("reading the Proxmox emulator's certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Clean(e.keyFile()))
	if err != nil {
		return fmt.Errorf("reading the Proxmox emulator's key: %w", err)
	}
	l, err := e.listen(testbed.KeyPair{CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		return err
	}
	return e.serve(ctx, log, l)
}

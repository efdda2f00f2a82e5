package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

// The provider Terraform starts is this program in wrapper mode: it runs
// the real provider as its child, passing stdio and environment through,
// and writes the child's peak RSS (getrusage's ru_maxrss, the kernel's
// VmHWM at exit, in KiB on Linux) where rssFileEnv says.
const (
	wrapEnv    = "INVENTORYPLANBENCH_PROVIDER"
	rssFileEnv = "INVENTORYPLANBENCH_MAXRSS_FILE"
)

// writeProviderWrapper writes the plugin directory dev_overrides points at:
// a terraform-provider-gpu script that execs this program in wrapper mode.
func writeProviderWrapper(work, realProvider string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(work, "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	script := fmt.Sprintf("#!/bin/sh\n%s=%q exec %q \"$@\"\n", wrapEnv, realProvider, self)
	return dir, os.WriteFile(filepath.Join(dir, "terraform-provider-gpu"), []byte(script), 0o755)
}

func wrapProvider() int {
	cmd := exec.Command(os.Getenv(wrapEnv), os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	if path := os.Getenv(rssFileEnv); path != "" {
		var maxRSS int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = ru.Maxrss
		}
		b, _ := json.Marshal(struct{ MaxRSSKiB int64 }{maxRSS})
		_ = os.WriteFile(path, b, 0o644)
	}
	return cmd.ProcessState.ExitCode()
}

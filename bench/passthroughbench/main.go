// Command passthroughbench measures creating and starting a Proxmox VE VM
// with a GPU passed through (a clone of the template, configured, started)
// on the testbed's Proxmox VE emulator, two ways in one process:
//
//   - this project's backend, internal/proxmox's CreateVM, which follows each
//     task's UPID with a growing poll interval (100 ms ×1.5, at most 2 s);
//   - the baseline: the same three steps through Telmate/proxmox-api-go's own
//     calls (CloneQemuVm, SetVmConfig, StartVm), which wait on each task
//     with the library's fixed 2-second sleep (TaskStatusCheckInterval).
//
// It reports wall time and API calls per create + start, and the ratio.
// Run it with `bash bench/passthrough.sh`; see bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

func main() {
	runs := flag.Int("runs", 3, "create + start cycles each way")
	taskDuration := flag.Duration("task-duration", 200*time.Millisecond, "how long each emulated Proxmox task runs")
	flag.Parse()
	if err := run(*runs, *taskDuration); err != nil {
		fmt.Fprintf(os.Stderr, "passthroughbench: %v\n", err)
		os.Exit(1)
	}
}

// benchNode and benchMapping are the emulator's node with two RTX A6000s
// and the PCI mapping of one of them (see internal/testbed/pveemu).
const (
	benchNode     = "pve-a6000"
	benchMapping  = "a6000-0"
	benchTemplate = "ubuntu-2404-cloud"
	firstVMID     = 300
)

func run(runs int, taskDuration time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	emu := pveemu.New(pveemu.Options{TaskDuration: taskDuration})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{emu}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()
	caPEM, err := os.ReadFile(emu.CAFile())
	if err != nil {
		return err
	}

	ours, err := newBackendWay(ctx, emu.URL(), caPEM)
	if err != nil {
		return err
	}
	baseline, err := newLibraryWay(emu.URL(), caPEM)
	if err != nil {
		return err
	}
	ways := []way{ours, baseline}
	results := map[string][]measurement{}
	for i := range runs {
		for j, w := range ways {
			vmid := firstVMID + 2*i + j
			emu.ResetCallCounts()
			started := time.Now()
			if err := w.createAndStart(ctx, vmid); err != nil {
				return fmt.Errorf("%s, VM %d: %w", w.name(), vmid, err)
			}
			m := measurement{wall: time.Since(started), calls: emu.CallCounts()}
			results[w.name()] = append(results[w.name()], m)
			if err := ours.destroy(ctx, vmid); err != nil {
				return fmt.Errorf("destroying VM %d: %w", vmid, err)
			}
		}
	}
	report(taskDuration, ours.name(), baseline.name(), results)
	return nil
}

// way is one way of creating and starting the benchmark's VM.
type way interface {
	name() string
	createAndStart(ctx context.Context, vmid int) error
}

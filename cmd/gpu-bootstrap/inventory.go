package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

func runInventory(_ context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("inventory", flag.ContinueOnError)
	var d desiredFlags
	d.registerHost(fs)
	asJSON := fs.Bool("json", false, "print the snapshot as JSON (driver, devices, topology, pci)")
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	gpus := env.openGPUs(d.sysfsRoot())
	defer gpus.Close()
	snap, err := gpus.Snapshot()
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap inventory: %v\n", err)
		return exitError
	}
	if *asJSON {
		return writeJSON(env, "inventory", inventoryJSON{Snapshot: snap, Warnings: inventoryWarnings(snap, env.now())})
	}
	writeInventory(env.stdout, snap, env.now())
	return exitOK
}

// inventoryJSON is `inventory --json`: the snapshot's fields, and the
// warnings the text output prints.
type inventoryJSON struct {
	nvml.Snapshot
	Warnings []string `json:"warnings,omitempty"`
}

// inventoryWarnings are what inventory warns about: a running driver whose
// branch is past NVIDIA's end of life on today.
func inventoryWarnings(snap nvml.Snapshot, today time.Time) []string {
	if warning := bootstrap.RunningDriverEndOfLife(snap.Driver, today); warning != "" {
		return []string{warning}
	}
	return nil
}

// writeInventory prints a snapshot for a person: the driver (and a line per
// inventory warning), a table of
// GPUs, and what the PCI bus shows when the driver does not.
func writeInventory(w io.Writer, snap nvml.Snapshot, today time.Time) {
	if !snap.Driver.Loaded {
		fmt.Fprintf(w, "Driver: %s\n", snap.Driver.Reason)
		writePCI(w, snap.PCI)
		return
	}
	fmt.Fprintf(w, "Driver: %s (CUDA %s)\n", snap.Driver.Version, snap.Driver.CUDAVersion)
	for _, warning := range inventoryWarnings(snap, today) {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	if len(snap.Devices) == 0 {
		fmt.Fprintln(w, "GPUs: none (the driver is loaded but reports no GPU)")
		writePCI(w, snap.PCI)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tNAME\tBUS ID\tMEMORY USED/TOTAL\tUTIL\tTEMP\tPOWER\tPERSIST\tMIG\tECC ERRORS\tPROCS")
	for _, dev := range snap.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d MiB\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
			dev.Index, dev.Name, dev.PCIBusID, dev.Memory.UsedMiB, dev.Memory.TotalMiB,
			optional(dev.UtilizationGPU, "%d%%"), optional(dev.TemperatureC, "%dC"), power(dev),
			onOff(dev.PersistenceMode), migState(dev.MIG), optional(dev.ECC.VolatileUncorrected, "%d"), len(dev.Processes))
	}
	tw.Flush()
	if len(snap.Topology) > 0 {
		fmt.Fprintln(w, "\nTopology (as nvidia-smi topo -m: NV<n> = n NVLinks, PIX/PXB = PCIe switch, PHB = host bridge, NODE = same NUMA node, SYS = across sockets):")
		writeTopology(w, snap)
	}
}

// writeTopology prints the GPU-to-GPU matrix; pairs NVML said nothing about
// are blank.
func writeTopology(w io.Writer, snap nvml.Snapshot) {
	level := map[[2]int]string{}
	for _, link := range snap.Topology {
		level[[2]int{link.GPU1, link.GPU2}] = link.Level
		level[[2]int{link.GPU2, link.GPU1}] = link.Level
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, dev := range snap.Devices {
		fmt.Fprintf(tw, "\tGPU%d", dev.Index)
	}
	fmt.Fprintln(tw)
	for _, row := range snap.Devices {
		fmt.Fprintf(tw, "GPU%d", row.Index)
		for _, col := range snap.Devices {
			cell := level[[2]int{row.Index, col.Index}]
			if row.Index == col.Index {
				cell = "X"
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func writePCI(w io.Writer, devices []nvml.PCIDevice) {
	if len(devices) == 0 {
		fmt.Fprintln(w, "NVIDIA PCI devices: none: this machine has no NVIDIA GPU")
		return
	}
	fmt.Fprintf(w, "NVIDIA PCI devices: %d\n", len(devices))
	for _, dev := range devices {
		driver := dev.Driver
		if driver == "" {
			driver = "no driver bound"
		}
		fmt.Fprintf(w, "  %s  device %s  class %s  %s\n", dev.Address, dev.DeviceID, dev.Class, driver)
	}
}

func optional[T any](v *T, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

func power(dev nvml.Device) string {
	switch {
	case dev.PowerDrawW != nil && dev.PowerLimitW != nil:
		return fmt.Sprintf("%.0f/%.0f W", *dev.PowerDrawW, *dev.PowerLimitW)
	case dev.PowerDrawW != nil:
		return fmt.Sprintf("%.0f W", *dev.PowerDrawW)
	}
	return "n/a"
}

func onOff(v *bool) string {
	switch {
	case v == nil:
		return "n/a"
	case *v:
		return "on"
	}
	return "off"
}

func migState(m nvml.MIG) string {
	if !m.Supported {
		return "n/a"
	}
	state := "off"
	if m.Current {
		state = fmt.Sprintf("on (%d)", len(m.Devices))
	}
	switch {
	case m.Pending && !m.Current:
		state += " -> on after reset"
	case !m.Pending && m.Current:
		state += " -> off after reset"
	}
	return state
}

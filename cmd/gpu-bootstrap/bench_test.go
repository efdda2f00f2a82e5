package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// benchConfig asks for every step the mock can satisfy.
const benchConfig = `
driver:
  branch: "550"
persistence: true
runtime:
  engine: containerd
  set_as_default: true
  enable_cdi: true
cdi:
  enabled: true
gpu:
  compute_mode: Default
  power_limit_watts: 350
verify:
  expect_gpus: 8
`

// BenchmarkPlanAllStepsNoOp plans every step against a DGX A100 whose root
// was configured by an apply, so every step finds nothing to do — the cost of
// `gpu-bootstrap plan` on a node that is already right, without process start.
// The snapshot sub-benchmark is the baseline: one NVML snapshot, which every
// plan takes at least once.
func BenchmarkPlanAllStepsNoOp(b *testing.B) {
	fleet := nvmltest.NewDGXA100()
	cfg, err := bootstrap.ParseConfig("bench.yaml", []byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	prepareDriverRoot(b, root)
	h := &bootstrap.Host{
		Root:   root,
		GPUs:   nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: b.TempDir()}),
		Runner: &bootstrap.RecordingRunner{},
	}
	ctx := context.Background()
	if _, err := bootstrap.Apply(ctx, h, cfg.Steps(), bootstrap.ApplyOptions{Out: io.Discard}); err != nil {
		b.Fatal(err)
	}
	plan, err := bootstrap.MakePlan(ctx, h, cfg.Steps())
	if err != nil {
		b.Fatal(err)
	}
	if !plan.Empty() {
		bootstrap.WritePlan(benchLog{b}, plan)
		b.Fatal("the plan after apply is not empty")
	}
	b.Run("plan", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := bootstrap.MakePlan(ctx, h, cfg.Steps()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("snapshot-baseline", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := h.GPUs.Snapshot(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// prepareDriverRoot lays out what the CDI step looks for under a root with
// driver 550.54.15: device nodes (regular files stand in for them) and the
// driver's libraries.
func prepareDriverRoot(b *testing.B, root string) {
	files := []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
		"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
		"/usr/bin/nvidia-container-runtime"} // the runtime step needs the toolkit's runtime
	for i := 0; i < 8; i++ {
		files = append(files, fmt.Sprintf("/dev/nvidia%d", i))
	}
	for _, f := range files {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

type benchLog struct{ b *testing.B }

func (l benchLog) Write(p []byte) (int, error) { l.b.Log(string(p)); return len(p), nil }

// BenchmarkInventoryJSON is `gpu-bootstrap inventory --json` in process on a
// mocked DGX A100 (8 GPUs): the snapshot plus its JSON encoding.
func BenchmarkInventoryJSON(b *testing.B) {
	env, stdout, _, _ := testEnv(nvmltest.NewDGXA100(), nil)
	sysfs := b.TempDir()
	for i := 0; i < b.N; i++ {
		stdout.Reset()
		if code := runIn(env, "inventory", "--json", "--sysfs", sysfs); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
}

package bootstrap

import (
	"strings"
	"testing"
)

func TestParseConfigRejectsUnknownKeys(t *testing.T) {
	_, err := ParseConfig("node.yaml", []byte("runtime:\n  engin: containerd\n"))
	if err == nil || !strings.Contains(err.Error(), "engin") || !strings.Contains(err.Error(), "node.yaml") {
		t.Fatalf("err = %v, want an unknown-field error naming the key and the file", err)
	}
}

func TestParseConfigReadsEverySection(t *testing.T) {
	cfg, err := ParseConfig("node.yaml", []byte(`
driver:
  branch: "570"
  kernel_modules: open
persistence: true
runtime:
  engine: containerd
  set_as_default: true
  enable_cdi: true
cdi:
  enabled: true
verify:
  expect_gpus: 8
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver.Branch != "570" || cfg.Driver.KernelModules != "open" || !*cfg.Persistence ||
		cfg.Runtime.Engine != "containerd" || !cfg.Runtime.SetAsDefault || !cfg.Runtime.EnableCDI ||
		!cfg.CDI.Enabled || cfg.Verify.ExpectGPUs != 8 {
		t.Errorf("parsed %+v", cfg)
	}
	var names []string
	for _, step := range cfg.Steps() {
		names = append(names, step.Name())
	}
	if got, want := strings.Join(names, ","), "driver,persistence,runtime,cdi"; got != want {
		t.Errorf("steps = %s, want %s", got, want)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// A k3s agent node as get.k3s.io leaves it, with the containerd config k3s
// generated (internal/bootstrap/testdata/runtime/k3s-generated): with
// `engine: auto` and no config_path, plan and apply find k3s's embedded
// containerd, write the template k3s renders it from, leave the generated
// file and /etc/containerd alone, and name k3s-agent as the unit to restart.
func TestK3sNodeIsFoundWithoutConfigPath(t *testing.T) {
	const dir = "var/lib/rancher/k3s/agent/etc/containerd"
	generated, err := os.ReadFile(filepath.Join("../../internal/bootstrap/testdata/runtime/k3s-generated/input", dir, "config.toml"))
	must(t, err)
	root := t.TempDir()
	for path, content := range map[string]string{
		"usr/bin/nvidia-container-runtime":                             "#!/bin/sh\n",
		"usr/local/bin/k3s":                                            "#!/bin/sh\n",
		"etc/systemd/system/k3s-agent.service":                         "[Service]\nExecStart=/usr/local/bin/k3s agent\n",
		"etc/systemd/system/multi-user.target.wants/k3s-agent.service": "[Service]\nExecStart=/usr/local/bin/k3s agent\n",
		dir + "/config.toml":                                           string(generated),
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, path), []byte(content), 0o755))
	}
	config := writeConfig(t, "runtime:\n  engine: auto\n  set_as_default: true\n")

	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	if code := runIn(env, "plan", "--config", config, "--root", root); code != exitChanges {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"/" + dir + "/config.toml.tmpl", "found k3s's embedded containerd (/usr/local/bin/k3s", "k3s-agent"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, stdout)
		}
	}
	stdout.Reset()
	if code := runIn(env, "apply", "--config", config, "--root", root, "--skip-verify"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "k3s-agent") {
		t.Errorf("apply does not name k3s-agent as the unit to restart:\n%s", stdout)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, dir, "config.toml.tmpl"))
	must(t, err)
	if !bytes.Contains(tmpl, []byte(`default_runtime_name = "nvidia"`)) {
		t.Errorf("the template does not make nvidia the default:\n%s", tmpl)
	}
	if now, _ := os.ReadFile(filepath.Join(root, dir, "config.toml")); !bytes.Equal(now, generated) {
		t.Errorf("the generated config (DO NOT EDIT) was changed")
	}
	if _, err := os.Stat(filepath.Join(root, "etc/containerd")); !os.IsNotExist(err) {
		t.Errorf("apply wrote to /etc/containerd, which a k3s node does not use (%v)", err)
	}
}

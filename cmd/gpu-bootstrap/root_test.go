package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// These tests hold gpu-bootstrap to --root: a root that is not there is said
// to be missing, and a root's links and a config's paths never reach the
// machine running the tool.

func TestAMissingRootIsSaidToBeMissing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "image")
	config := writeConfig(t, "runtime:\n  engine: containerd\n")
	for _, cmd := range []string{"plan", "apply", "check"} {
		env, _, stderr, runner := testEnv(nvmltest.NewDGXA100(), nil)
		if code := runIn(env, cmd, "--config", config, "--root", root); code != exitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", cmd, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr.String(), "--root "+root+" does not exist") || strings.Contains(stderr.String(), "runtime binary") {
			t.Errorf("%s: the error does not say the root is missing: %q", cmd, stderr)
		}
		if len(runner.Calls) != 0 {
			t.Errorf("%s ran commands for a missing root: %v", cmd, runner.Lines())
		}
	}
}

// An image whose containerd config is an absolute link to a file the image
// ships: the plan reads and edits that file, says so, and apply keeps the
// link, the image's settings and a backup.
func TestApplyEditsTheImagesLinkedContainerdConfig(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/bin/nvidia-container-runtime"), []byte("#!/bin/sh\n"), 0o755))
	shipped := "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"
	must(t, os.MkdirAll(filepath.Join(root, "usr/share/containerd"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/share/containerd/config.toml"), []byte(shipped), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755))
	must(t, os.Symlink("/usr/share/containerd/config.toml", filepath.Join(root, "etc/containerd/config.toml")))
	config := writeConfig(t, "runtime:\n  engine: containerd\n")

	if code := runIn(env, "plan", "--config", config, "--root", root); code != exitChanges {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "symbolic link /etc/containerd/config.toml -> /usr/share/containerd/config.toml") {
		t.Errorf("the plan does not say the write goes through the link:\n%s", stdout)
	}
	stdout.Reset()
	if code := runIn(env, "apply", "--config", config, "--root", root, "--skip-verify"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if dest, err := os.Readlink(filepath.Join(root, "etc/containerd/config.toml")); err != nil || dest != "/usr/share/containerd/config.toml" {
		t.Errorf("the link was not kept: %q, %v", dest, err)
	}
	written, err := os.ReadFile(filepath.Join(root, "usr/share/containerd/config.toml"))
	must(t, err)
	if !strings.Contains(string(written), "registry.k8s.io/pause:3.10") || !strings.Contains(string(written), "nvidia") {
		t.Errorf("the image's file lost its settings or did not get the runtime:\n%s", written)
	}
	backup := filepath.Join(root, "var/backups/gpu-bootstrap/20261122T080000Z/etc/containerd/config.toml")
	if data, err := os.ReadFile(backup); err != nil || string(data) != shipped {
		t.Errorf("no backup of the image's file at %s (%v): %q", backup, err, data)
	}
}

func TestAConfigPathThatClimbsOutOfTheRootIsRejected(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "x.toml")
	config := writeConfig(t, "runtime:\n  engine: containerd\n  config_path: /../../../../.."+outside+"\n")
	if code := runIn(env, "apply", "--config", config, "--root", root); code != exitError {
		t.Fatalf("apply: exit %d, want %d\n%s%s", code, exitError, stdout, stderr)
	}
	if !strings.Contains(stderr.String(), "runtime.config_path") || !strings.Contains(stderr.String(), "climb out") {
		t.Errorf("the error does not name runtime.config_path and the climb: %q", stderr)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("apply created %s outside the root (err %v)", outside, err)
	}
}

// The runtime binary check looks inside the root: a link to a binary that
// only the build host has is a missing binary.
func TestARuntimeBinaryLinkedToTheBuildHostIsMissing(t *testing.T) {
	hostBinary := filepath.Join(t.TempDir(), "nvidia-container-runtime")
	must(t, os.WriteFile(hostBinary, []byte("#!/bin/sh\n"), 0o755))
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(t, os.Symlink(hostBinary, filepath.Join(root, "usr/bin/nvidia-container-runtime")))
	config := writeConfig(t, "runtime:\n  engine: containerd\n")
	if code := runIn(env, "plan", "--config", config, "--root", root); code != exitError {
		t.Fatalf("plan: exit %d, want %d\n%s%s", code, exitError, stdout, stderr)
	}
	if !strings.Contains(stderr.String(), "/usr/bin/nvidia-container-runtime does not exist under "+root) {
		t.Errorf("the link to the build host's binary was taken for the runtime: %q", stderr)
	}
}

// A root reached through a link works as the directory it names.
func TestARootReachedThroughALinkIsUsed(t *testing.T) {
	env, stdout, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	realRoot := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(realRoot, "usr/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(realRoot, "usr/bin/nvidia-container-runtime"), []byte("#!/bin/sh\n"), 0o755))
	root := filepath.Join(t.TempDir(), "image")
	must(t, os.Symlink(realRoot, root))
	config := writeConfig(t, "runtime:\n  engine: containerd\n")
	if code := runIn(env, "apply", "--config", config, "--root", root, "--skip-verify"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(realRoot, "etc/containerd/config.toml")); err != nil || !strings.Contains(string(data), "nvidia") {
		t.Errorf("the config was not written in the linked root: %v\n%s", err, data)
	}
	if info, err := os.Lstat(root); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the root's link was replaced (%v)", err)
	}
}

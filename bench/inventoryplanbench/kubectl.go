package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// kubectlBinary builds kubectl at the testbed's Kubernetes version from
// tools/kube's module (k8s.io/kubernetes/cmd/kubectl, with tools/kube's
// replaces of the staging modules) into <cache>/bin/kubectl-<version>,
// once, under a file lock so that two runs at once do not both write it.
// tools/kube's go.sum lacks kubectl's own dependencies (kustomize, ...), so
// the build uses a copy of its go.mod and go.sum (-modfile) that `go build
// -mod=mod` completes, leaving tools/kube untouched. Not part of `make
// testbed`: only this benchmark runs kubectl.
func kubectlBinary(ctx context.Context) (string, error) {
	root, err := testbed.CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "kubectl-"+testbed.KubernetesVersion)
	bin := filepath.Join(dir, "kubectl")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s.lock: %w", dir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tools, err := filepath.Abs(filepath.Join("tools", "kube"))
	if err != nil {
		return "", err
	}
	mod, err := os.MkdirTemp("", "kubectl-modfile-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(mod)
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(tools, name))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
			return "", err
		}
	}
	fmt.Printf("building kubectl %s into %s (once; a few minutes)\n", testbed.KubernetesVersion, dir)
	tmp := filepath.Join(dir+".tmp", "kubectl")
	build := exec.CommandContext(ctx, "go", "build", "-mod=mod", "-modfile="+filepath.Join(mod, "go.mod"), "-o", tmp, "k8s.io/kubernetes/cmd/kubectl")
	build.Dir = tools
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl: %w\n%s", err, out)
	}
	if err := os.Rename(dir+".tmp", dir); err != nil {
		return "", err
	}
	return bin, nil
}

// kubectlGetNodes times `kubectl get nodes -o json`, its output discarded.
func kubectlGetNodes(ctx context.Context, kubectl, kubeconfig string) (result, error) {
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "nodes", "-o", "json")
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("kubectl get nodes: %w", err)
	}
	r := result{variant: "kubectl get nodes -o json", wall: time.Since(started)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKiB = ru.Maxrss
	}
	return r, nil
}

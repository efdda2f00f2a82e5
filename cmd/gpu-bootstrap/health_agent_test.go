package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// unreachableKubeconfig writes a kubeconfig whose API server refuses
// connections (a port nothing listens on).
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	must(t, ln.Close())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "https://%s", insecure-skip-tls-verify: true}
users:
- name: agent
  user: {token: not-checked}
contexts:
- name: gone
  context: {cluster: gone, user: agent}
current-context: gone
`, addr)), 0o600))
	return path
}

var agentServingLine = regexp.MustCompile(`serving (http://\S+)/metrics`)

// startHealthAgent runs `gpu-bootstrap health-agent` in the background and
// returns the URL it serves, its stderr, and a stop that returns its exit
// code.
func startHealthAgent(t *testing.T, fleet *nvmltest.Fleet, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	env, _, _, _ := testEnv(fleet, map[string]string{"NODE_NAME": "gpu-node-1"})
	env.now = time.Now
	stderr := &syncBuffer{}
	env.stderr = stderr
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append([]string{"health-agent", "--listen", "127.0.0.1:0", "--interval", "50ms", "--sysfs", t.TempDir()}, args...), env)
	}()
	stop := func() int {
		cancel()
		select {
		case code := <-exited:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("health-agent did not stop 30 s after it was interrupted; stderr:\n%s", stderr)
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := agentServingLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, stop
		}
		select {
		case code := <-exited:
			t.Fatalf("health-agent exited %d before serving; stderr:\n%s", code, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("health-agent never said where it serves; stderr:\n%s", stderr)
	return "", nil, nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(body)
}

func TestHealthAgentServesMetricsAndWaitsOutAnUnreachableAPIServer(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	url, stderr, stop := startHealthAgent(t, fleet, "--kubeconfig", unreachableKubeconfig(t))
	code, body := get(t, url+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "DCGM_FI_DEV_GPU_TEMP{") {
		t.Fatalf("/metrics answered %d:\n%.500s", code, body)
	}
	if code, _ := get(t, url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz answered %d", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "cannot reach the API server") {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never said the API server is unreachable; stderr:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d after an interrupt, want 0; stderr:\n%s", code, stderr)
	}
}

func TestHealthAgentKeepsRunningWithoutADriver(t *testing.T) {
	url, stderr, stop := startHealthAgent(t, nil, "--kubeconfig", unreachableKubeconfig(t))
	time.Sleep(300 * time.Millisecond)
	if code, _ := get(t, url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz answered %d without a driver", code)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d after an interrupt, want 0 (no driver is a state, not a failure); stderr:\n%s", code, stderr)
	}
}

func TestHealthAgentRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		description string
		args        []string
		vars        map[string]string
		want        string
	}{
		{"no node name", []string{"health-agent"}, nil, "--node-name"},
		{"a bad fault class", []string{"health-agent", "--fatal", "xid_critical,bogus"}, map[string]string{"NODE_NAME": "n"}, "bogus"},
		{"a kubeconfig that does not exist", []string{"health-agent", "--kubeconfig", "/nonexistent/kubeconfig"}, map[string]string{"NODE_NAME": "n"}, "--kubeconfig"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			env, _, stderr, _ := testEnv(nvmltest.NewDGXA100(), tc.vars)
			code := run(context.Background(), tc.args, env)
			if code == exitOK || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure naming %q", code, stderr, tc.want)
			}
		})
	}
}

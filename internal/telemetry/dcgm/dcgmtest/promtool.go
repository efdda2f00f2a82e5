// Package dcgmtest checks a metrics exposition with Prometheus' own tool:
// `promtool check metrics` from Debian's prometheus package. Tests of
// package dcgm and of `gpu-bootstrap metrics` use it.
package dcgmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// NeedTool returns the path of a Prometheus tool. When it is missing the
// test fails under GPU_TESTBED_REQUIRED=1 (or in CI) and is skipped
// otherwise.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not found: the metrics tests check the exposition with Prometheus' own tools (Debian: apt-get install prometheus)", name)
		if testbed.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// inherentLint are the problems promtool's linter finds in dcgm-exporter's
// own output: its names and labels predate Prometheus' naming advice, and
// dashboards depend on them as they are. Any other problem fails.
var inherentLint = []*regexp.Regexp{
	regexp.MustCompile(`^DCGM_FI_\w+ counter metrics should have "_total" suffix$`),
	regexp.MustCompile(`^DCGM_FI_\w+ label names should be written in 'snake_case' not 'camelCase'$`), // modelName
	regexp.MustCompile(`^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$`),
}

// Promtool runs `promtool check metrics` on an exposition. It fails t when
// promtool cannot parse it (exit 1) or reports a lint problem dcgm-exporter's
// names do not carry themselves.
func Promtool(t testing.TB, exposition []byte) {
	t.Helper()
	promtool := NeedTool(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return
	case errors.As(err, &exit) && exit.ExitCode() == 3: // lint problems only
	default:
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !inherent(line) {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
}

func inherent(problem string) bool {
	for _, re := range inherentLint {
		if re.MatchString(problem) {
			return true
		}
	}
	return false
}

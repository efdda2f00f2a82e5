package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// WriteKubeconfig writes, for a test of how clients read kubeconfigs, a
// kubeconfig whose current context "bed" joins cluster "bed" (server, and
// the YAML line clusterLine, e.g. certificate-authority-data) and user
// "intruder" (the YAML line userLine, e.g. a token), and returns its path
// in the test's temporary directory.
func WriteKubeconfig(t testing.TB, server, clusterLine, userLine string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: bed
clusters:
- name: bed
  cluster:
    server: %q
    %s
users:
- name: intruder
  user:
    %s
contexts:
- name: bed
  context: {cluster: bed, user: intruder}
`, server, clusterLine, userLine)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

package bootstrap

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/nvrepo"
)

// The toolkit step with real dnf on Amazon Linux 2023: NVIDIA's
// libnvidia-container rpm repository (signed metadata, repo_gpgcheck=1)
// added with dnf config-manager, the four packages pinned to one version,
// moved up and down together.

func TestRealDNFToolkitPinsMoveAllFourPackages(t *testing.T) {
	b := newDNFTestbed(t, al2023, "580.95.05")
	toolkit := nvrepo.BuildToolkitRPM(t, nil)
	b.server.Mount(nvrepo.ToolkitRPMAddress, toolkit.Dir())

	apply := func(t *testing.T, cfg ToolkitConfig) string {
		t.Helper()
		var out bytes.Buffer
		if _, err := Apply(context.Background(), b.host, []Step{toolkitStep{cfg: cfg}}, ApplyOptions{Out: &out}); err != nil {
			t.Fatalf("apply %+v: %v\n%s", cfg, err, out.String())
		}
		return out.String()
	}
	wantToolkit := func(t *testing.T, cfg ToolkitConfig, v string) {
		t.Helper()
		out := chrootRun(t, b.root, "rpm", "-q", "--queryformat", "%{NAME}-%{VERSION}-%{RELEASE}\n",
			"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1")
		want := "nvidia-container-toolkit-" + v + "\nnvidia-container-toolkit-base-" + v + "\nlibnvidia-container-tools-" + v + "\nlibnvidia-container1-" + v + "\n"
		if out != want {
			t.Errorf("installed:\n%swant:\n%s", out, want)
		}
		changes, err := toolkitStep{cfg: cfg}.Plan(context.Background(), b.host)
		if err != nil || len(changes) != 0 {
			t.Errorf("plan after apply: %v, %v; want no changes", changeCommands(changes), err)
		}
	}

	t.Run("install pinned to 1.17.8", func(t *testing.T) {
		cfg := ToolkitConfig{Install: true, Version: "1.17.8"}
		apply(t, cfg)
		wantToolkit(t, cfg, "1.17.8-1")
		var signature bool
		for _, r := range b.server.Requests() {
			signature = signature || strings.HasSuffix(r, "/stable/rpm/x86_64/repodata/repomd.xml.asc")
		}
		if !signature {
			t.Errorf("dnf never fetched repomd.xml.asc: repo_gpgcheck did not run; requests: %v", b.server.Requests())
		}
	})
	t.Run("pin up to 1.18.1", func(t *testing.T) {
		cfg := ToolkitConfig{Install: true, Version: "1.18.1-1"}
		apply(t, cfg)
		wantToolkit(t, cfg, "1.18.1-1")
	})
	t.Run("pin down to 1.18.0", func(t *testing.T) {
		cfg := ToolkitConfig{Install: true, Version: "1.18.0"}
		apply(t, cfg)
		wantToolkit(t, cfg, "1.18.0-1")
	})
	t.Run("no pin: the installed toolkit stays", func(t *testing.T) {
		cfg := ToolkitConfig{Install: true}
		if out := apply(t, cfg); !strings.Contains(out, "No changes") {
			t.Errorf("apply without a pin changed something:\n%s", out)
		}
		wantToolkit(t, cfg, "1.18.0-1")
	})
}

package bootstrap

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const bomConfig = "\uFEFFversion = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"

func TestRuntimeWarnsOfAByteOrderMarkContainerdMayRefuse(t *testing.T) {
	cases := []struct {
		description string
		files       map[string]string
		version     string // what `containerd --version` prints; "" for nothing
		path        string // the file the plan edits
		wantWarning []string
		wantErr     string
	}{
		{
			description: "no containerd binary answers: the versions that refuse the file are named",
			files:       map[string]string{"/etc/containerd/config.toml": bomConfig},
			path:        "/etc/containerd/config.toml",
			wantWarning: []string{"/etc/containerd/config.toml starts with a UTF-8 byte order mark", "gave no version", "containerd 2.0 and later", "containerd 1.4 and earlier", "1.5 to 1.7", "EF BB BF"},
		},
		{
			description: "a cross-architecture image: the binary is there but does not run",
			files:       map[string]string{"/usr/bin/containerd": "\x7fELF", "/etc/containerd/config.toml": bomConfig},
			path:        "/etc/containerd/config.toml",
			wantWarning: []string{"/etc/containerd/config.toml starts with a UTF-8 byte order mark", "containerd 2.0 and later"},
		},
		{
			description: "k3s's embedded containerd has no binary: the template the plan writes is named",
			files: map[string]string{
				k3sBinary:                         "#!/bin/sh\n",
				"/etc/systemd/system/k3s.service": k3sServerUnit,
				k3sContainerdDir + "/config.toml": "\uFEFF" + k3sGenerated(t),
			},
			path:        k3sContainerdDir + "/config.toml.tmpl",
			wantWarning: []string{k3sContainerdDir + "/config.toml.tmpl starts with a UTF-8 byte order mark", "containerd 2.0 and later"},
		},
		{
			description: "containerd 1.4 reads TOML with BurntSushi/toml v0.3.1, which refuses the mark",
			files:       map[string]string{"/etc/containerd/config.toml": bomConfig},
			version:     "containerd github.com/containerd/containerd v1.4.13 9cc61520f4cd876b86e77edfeb88fbcd536d1f9d",
			path:        "/etc/containerd/config.toml",
			wantWarning: []string{"/etc/containerd/config.toml starts with a UTF-8 byte order mark", "containerd 1.4.13 reads its config with BurntSushi/toml v0.3.1"},
		},
		{
			description: "containerd 1.7 skips the mark: nothing to say",
			files:       map[string]string{"/etc/containerd/config.toml": bomConfig},
			version:     "containerd github.com/containerd/containerd v1.7.24 88bf19b2105c8b17560993bee28a01ddc2f97182",
			path:        "/etc/containerd/config.toml",
		},
		{
			description: "no mark, no version: nothing to say",
			files:       map[string]string{"/etc/containerd/config.toml": strings.TrimPrefix(bomConfig, "\uFEFF")},
			path:        "/etc/containerd/config.toml",
		},
		{
			description: "containerd 2.x is known to refuse it: an error, as before",
			files:       map[string]string{"/etc/containerd/config.toml": bomConfig},
			version:     "containerd containerd.io v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376",
			wantErr:     "UTF-8 byte order mark",
		},
	}
	for _, c := range cases {
		t.Run(c.description, func(t *testing.T) {
			ctx := context.Background()
			versions := map[string]string{}
			if c.version != "" {
				versions["containerd --version"] = c.version
			}
			h := effectiveHost(t, c.files, versions)
			steps := []Step{newRuntimeStep(RuntimeConfig{Engine: engineContainerd, SetAsDefault: true}, nil)}
			plan, err := MakePlan(ctx, h, steps)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 1, plan.Count())
			require.Equal(t, c.path, plan[0].Changes[0].File().Path)
			if len(c.wantWarning) == 0 {
				require.Empty(t, plan[0].Warnings)
				return
			}
			require.Len(t, plan[0].Warnings, 1, "%q", plan[0].Warnings)
			for _, s := range c.wantWarning {
				require.Contains(t, plan[0].Warnings[0], s)
			}

			// The edit keeps the mark, as the warning says, and the plan
			// keeps saying so once nothing is left to change.
			report, err := Apply(ctx, h, steps, ApplyOptions{Out: io.Discard})
			require.NoError(t, err)
			require.Equal(t, []string{"runtime: " + plan[0].Warnings[0]}, report.Warnings)
			written, err := os.ReadFile(h.Path(c.path))
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(written), "\uFEFF"), "the edit kept the mark:\n%s", written)
			require.Contains(t, string(written), "nvidia")
			again, err := MakePlan(ctx, h, steps)
			require.NoError(t, err)
			require.True(t, again.Empty())
			require.Equal(t, plan[0].Warnings, again[0].Warnings)
		})
	}
}

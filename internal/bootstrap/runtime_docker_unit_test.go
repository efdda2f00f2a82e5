package bootstrap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// dockerPackageUnit is the ExecStart of docker-ce's docker.service
// (docker/docker-ce-packaging systemd/docker.service).
const dockerPackageUnit = "[Service]\nType=notify\nExecStart=/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock\nExecReload=/bin/kill -s HUP $MAINPID\n"

func TestRuntimeDockerRefusesAFlagThatDaemonJSONWouldRepeat(t *testing.T) {
	cases := []struct {
		description string
		files       map[string]string
		setDefault  bool
		wantErr     string // "" = plans
	}{
		{
			description: "the package's unit passes no runtime flag: daemon.json may set both",
			files:       map[string]string{"/usr/lib/systemd/system/docker.service": dockerPackageUnit},
			setDefault:  true,
		},
		{
			description: "a drop-in that starts dockerd with --default-runtime: set_as_default would make dockerd refuse to start",
			files: map[string]string{
				"/usr/lib/systemd/system/docker.service":             dockerPackageUnit,
				"/etc/systemd/system/docker.service.d/override.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/dockerd -H fd:// \\\n  --default-runtime=runc\n",
			},
			setDefault: true,
			wantErr:    "/etc/systemd/system/docker.service.d/override.conf starts dockerd with --default-runtime runc",
		},
		{
			description: "--add-runtime is dockerd's \"runtimes\": the nvidia runtime in daemon.json would stop dockerd",
			files: map[string]string{
				"/etc/systemd/system/docker.service": "[Service]\nExecStart=/usr/bin/dockerd --add-runtime crun=/usr/bin/crun\n",
			},
			wantErr: `would set "runtimes" as well`,
		},
		{
			description: "an ExecStart= reset in a drop-in drops the package's flags",
			files: map[string]string{
				"/etc/systemd/system/docker.service":               "[Service]\nExecStart=/usr/bin/dockerd --default-runtime runc\n",
				"/etc/systemd/system/docker.service.d/10-gpu.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/dockerd -H fd://\n",
			},
			setDefault: true,
		},
	}
	for _, c := range cases {
		t.Run(c.description, func(t *testing.T) {
			h := effectiveHost(t, c.files, nil)
			_, err := MakePlan(context.Background(), h, []Step{newRuntimeStep(RuntimeConfig{Engine: engineDocker, SetAsDefault: c.setDefault}, nil)})
			if c.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.wantErr)
		})
	}
}

package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnitStateFollowsSystemdsPrecedence(t *testing.T) {
	for _, tc := range []struct {
		description string
		files       map[string]string
		want        systemUnit
	}{
		{description: "not installed"},
		{
			description: "a package's unit, enabled",
			files: map[string]string{
				"/lib/systemd/system/x.service":                         "[Service]\n",
				"/etc/systemd/system/multi-user.target.wants/x.service": "->/lib/systemd/system/x.service",
			},
			want: systemUnit{path: "/lib/systemd/system/x.service", enabled: true},
		},
		{
			description: "masked in /etc over the package's unit",
			files: map[string]string{
				"/lib/systemd/system/x.service": "[Service]\n",
				"/etc/systemd/system/x.service": "->/dev/null",
			},
			want: systemUnit{masked: "/etc/systemd/system/x.service"},
		},
		{
			description: "a file in /etc overrides a /dev/null link of lower precedence",
			files: map[string]string{
				"/etc/systemd/system/x.service": "[Service]\n",
				"/lib/systemd/system/x.service": "->/dev/null",
			},
			want: systemUnit{path: "/etc/systemd/system/x.service"},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			root := t.TempDir()
			plantFiles(t, root, tc.files)
			require.Equal(t, tc.want, unitState(&Host{Root: root}, "x.service"))
		})
	}
}

package bootstrap

import "context"

// renderFixture is a change of every kind, each in a step of its own.
func renderFixture() []planStep {
	nothing := func(context.Context, *Host) error { return nil }
	return []planStep{
		{"runtime", []Change{
			{
				Summary: "add the nvidia runtime to /etc/containerd/config.toml",
				Ops:     []Op{FileOp{File: &FileChange{Path: "/etc/containerd/config.toml", Old: []byte("version = 2\nkeep = true\n"), New: []byte("version = 2\nkeep = true\n[nvidia]\n"), Mode: 0o644}}},
				Restart: "containerd",
			},
			{
				Summary: "write the CDI spec",
				Ops:     []Op{FileOp{File: &FileChange{Path: "/etc/cdi/nvidia.yaml", New: []byte("cdiVersion: 0.5.0\n"), Mode: 0o644}}},
				Note:    "containers name GPUs by CDI device",
			},
		}},
		{"persistence", []Change{
			{
				Summary: "reload systemd",
				Ops:     commandOps(Command{Root: "/", Name: "systemctl", Args: []string{"daemon-reload"}}, Command{Root: "/mnt/image", Name: "systemctl", Args: []string{"enable", "a b"}}),
			},
			{
				Summary: "turn persistence mode on",
				Ops:     []Op{ActionOp(nothing)},
				Note:    "takes effect at once",
			},
		}},
		{"driver", []Change{
			{
				Summary: "move the driver stack to branch 580",
				Ops: []Op{
					CheckOp{What: "check that no other apt or dpkg holds the lock", Check: nothing},
					CommandOp{Command: Command{Root: "/", Name: "apt-get", Args: []string{"update"}}, FatalWarnings: []string{"example.org"}},
					RemoveOp{Path: "/etc/apt/preferences.d/nvidia"},
					FileOp{File: &FileChange{Path: "/etc/apt/preferences.d/nvidia-580", Old: []byte("Pin: 570\n"), New: []byte("Pin: 580\n"), Mode: 0o644}},
					CommandOp{Command: Command{Root: "/", Name: "apt-get", Args: []string{"install", "-y", "nvidia-open"}}},
				},
				Undo: []Op{
					CheckOp{What: "check that the driver stack is as it was", Check: nothing},
					FileOp{File: &FileChange{Path: "/etc/apt/preferences.d/nvidia-580", Old: []byte("Pin: 580\n"), New: []byte("Pin: 570\n"), Mode: 0o644}},
					CommandOp{Command: Command{Root: "/", Name: "apt-get", Args: []string{"install", "-y", "old"}}},
				},
				Reboot: true,
				Note:   "reboot to load branch 580",
			},
			{
				Summary: "write the lock alone, with an undo",
				Ops:     []Op{FileOp{File: &FileChange{Path: "/etc/lock", New: []byte("x\n"), Mode: 0o644}}},
				Undo:    []Op{RemoveOp{Path: "/etc/lock"}},
			},
		}},
	}
}

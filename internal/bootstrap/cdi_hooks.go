package bootstrap

import specs "tags.cncf.io/container-device-interface/specs-go"

// cdiHooks makes the OCI hooks of the CDI spec the way nvcdi's hook creator
// (internal/discover/hooks.go) does: createContainer hooks that run the
// toolkit's hook program with the hook name as its first argument and
// NVIDIA_CTK_DEBUG=false in the environment.
type cdiHooks struct {
	path string   // program the engine runs
	args []string // argv before the hook name
}

// newCDIHooks picks the hook program installed on the target:
// nvidia-cdi-hook (toolkit 1.16 and later), else `nvidia-ctk hook` (older
// toolkits), else nvidia-cdi-hook, which installing the toolkit will bring.
func newCDIHooks(h *Host) cdiHooks {
	switch {
	case h.Exists("/usr/bin/nvidia-cdi-hook"):
	case h.Exists("/usr/bin/nvidia-ctk"):
		return cdiHooks{path: "/usr/bin/nvidia-ctk", args: []string{"nvidia-ctk", "hook"}}
	}
	return cdiHooks{path: "/usr/bin/nvidia-cdi-hook", args: []string{"nvidia-cdi-hook"}}
}

func (c cdiHooks) hook(name string, args ...string) *specs.Hook {
	argv := append(append(append([]string{}, c.args...), name), args...)
	return &specs.Hook{
		HookName: "createContainer",
		Path:     c.path,
		Args:     argv,
		Env:      []string{"NVIDIA_CTK_DEBUG=false"},
	}
}

// createSymlinks makes links ("target::link") in the container.
func (c cdiHooks) createSymlinks(links []string) *specs.Hook {
	var args []string
	for _, link := range links {
		args = append(args, "--link", link)
	}
	return c.hook("create-symlinks", args...)
}

// updateLDCache runs ldconfig in the container over the library folders.
func (c cdiHooks) updateLDCache(folders []string) *specs.Hook {
	var args []string
	for _, folder := range folders {
		args = append(args, "--folder", folder)
	}
	return c.hook("update-ldcache", args...)
}

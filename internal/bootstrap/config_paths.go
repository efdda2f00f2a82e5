package bootstrap

import (
	"strings"
)

// This file checks the paths a config names on the target. Every one is
// resolved inside --root as a chroot would (rootpath.go), so ".." could
// never leave the root; but a path that says "/../../tmp/x.toml" means
// something else than what the bootstrap would write, and is rejected
// rather than quietly clamped.

// targetPath is one config key that names a path on the target.
type targetPath struct{ field, value string }

// targetPaths are the config's paths on the target that are set.
func (c *Config) targetPaths() []targetPath {
	var paths []targetPath
	if c.Runtime != nil {
		paths = append(paths,
			targetPath{"runtime.config_path", c.Runtime.ConfigPath},
			targetPath{"runtime.runtime_path", c.Runtime.RuntimePath})
	}
	if c.CDI != nil {
		paths = append(paths, targetPath{"cdi.spec_path", c.CDI.SpecPath})
	}
	return paths
}

// validatePaths rejects target paths that climb with "..": they would
// leave the root (or, on the node, name another file than they seem to).
func (c *Config) validatePaths() []error {
	var errs []error
	for _, p := range c.targetPaths() {
		if climbs(p.value) {
			errs = append(errs, fieldError(p.field, "%q contains \"..\": paths are taken inside --root and may not climb out of it; give the file's absolute path without \"..\"", p.value))
		}
	}
	return errs
}

// climbs reports whether a path has a ".." component.
func climbs(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

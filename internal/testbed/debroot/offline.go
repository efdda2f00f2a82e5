package debroot

import (
	"fmt"
	"os"
	"path/filepath"
)

// aptConf is written to /etc/apt/apt.conf.d/ of every root. Option names
// are apt.conf(5)'s (apt 2.6, Debian 12).
const aptConf = `// Written by internal/testbed/debroot for tests: the root reaches only the
// repositories a test adds.
// No Translation-* downloads: the test repositories have none.
Acquire::Languages "none";
// One attempt per download, so a fault a test injects for n requests
// fails n downloads, not fewer (apt 2.6 retries 3 times by default).
Acquire::Retries "0";
// Plain dpkg output in logs.
Dpkg::Use-Pty "0";
`

// policyRC is /usr/sbin/policy-rc.d: exit status 101 tells invoke-rc.d not
// to start services in the root ("action forbidden by policy", see
// /usr/share/doc/init-system-helpers/README.policy-rc.d.gz), as in a chroot
// image build.
const policyRC = "#!/bin/sh\n# Written by internal/testbed/debroot: no service starts in a test root.\nexit 101\n"

// prepareOffline empties the apt sources debootstrap wrote and removes the
// package lists and downloaded packages, so that tests never depend on
// Debian's archive, and writes the apt and invoke-rc.d settings above.
func prepareOffline(root string) error {
	if err := os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), nil, 0o644); err != nil {
		return fmt.Errorf("emptying sources.list: %w", err)
	}
	for _, pattern := range []string{
		"etc/apt/sources.list.d/*",
		"var/lib/apt/lists/*_*", // index files; keeps lock and partial/
		"var/cache/apt/archives/*.deb",
		"var/cache/apt/*.bin",
		"debootstrap", // left by a --foreign first stage if any
	} {
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/apt/apt.conf.d/99gpu-testbed"), []byte(aptConf), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "usr/sbin/policy-rc.d"), []byte(policyRC), 0o755)
}

package nvrepo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Trust makes a root reach the server: /etc/hosts maps developer.download.nvidia.com, nvidia.github.io
// (and any host Mount was given) to 127.0.0.1, and the test CA is appended to the root's CA bundles
// (/etc/ssl/certs/ca-certificates.crt on Debian; /etc/pki/tls/certs/ca-bundle.crt and
// /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem on the RHEL layout, created if missing).
//
// The CA is also put where each distribution's bundle generator reads
// local anchors (/usr/local/share/ca-certificates/*.crt for Debian's
// update-ca-certificates(8), /etc/pki/ca-trust/source/anchors/ for
// update-ca-trust(8)), so a package that regenerates the bundle keeps it.
// Calling Trust again adds nothing twice.
func (s *Server) Trust(root string) error {
	hosts := slices.Concat(defaultHosts, s.l.mountedHosts())
	slices.Sort(hosts)
	if err := addHosts(filepath.Join(root, "etc/hosts"), slices.Compact(hosts)); err != nil {
		return fmt.Errorf("nvrepo: trusting the server in %s: %w", root, err)
	}
	ca := s.l.ca.CertPEM()
	var bundles, anchors []string
	if _, err := os.Stat(filepath.Join(root, "etc/debian_version")); err == nil {
		bundles = []string{"etc/ssl/certs/ca-certificates.crt"}
		anchors = []string{"usr/local/share/ca-certificates/gpu-testbed-nvrepo.crt"}
	} else {
		bundles = []string{"etc/pki/tls/certs/ca-bundle.crt", "etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"}
		anchors = []string{"etc/pki/ca-trust/source/anchors/gpu-testbed-nvrepo.pem"}
	}
	for _, b := range bundles {
		if err := appendOnce(filepath.Join(root, b), ca); err != nil {
			return fmt.Errorf("nvrepo: adding the test CA to %s: %w", b, err)
		}
	}
	for _, a := range anchors {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, a)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, a), ca, 0o644); err != nil {
			return fmt.Errorf("nvrepo: writing the test CA anchor %s: %w", a, err)
		}
	}
	return nil
}

// addHosts appends "127.0.0.1 host" for each host not yet in the file.
func addHosts(path string, hosts []string) error {
	existing, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var add strings.Builder
	for _, h := range hosts {
		line := "127.0.0.1\t" + h + "\n"
		if !bytes.Contains(existing, []byte(line)) {
			add.WriteString(line)
		}
	}
	if add.Len() == 0 {
		return nil
	}
	if len(existing) > 0 && !bytes.HasSuffix(existing, []byte("\n")) {
		existing = append(existing, '\n')
	}
	return os.WriteFile(path, append(existing, "# gpu-testbed nvrepo: NVIDIA's hosts served by the test server\n"+add.String()...), 0o644)
}

// appendOnce appends data to the file (creating it and its directory) if
// the file does not already hold it.
func appendOnce(path string, data []byte) error {
	existing, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if bytes.Contains(existing, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if len(existing) > 0 && !bytes.HasSuffix(existing, []byte("\n")) {
		existing = append(existing, '\n')
	}
	return os.WriteFile(path, append(existing, data...), 0o644)
}

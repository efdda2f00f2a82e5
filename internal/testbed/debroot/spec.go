package debroot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Spec says which root to make.
type Spec struct {
	Suite   string   // "trixie" (Debian 13), "bookworm" (Debian 12), "bullseye" (Debian 11)
	Arch    string   // "amd64" (default) or "arm64" (foreign: debootstrap --foreign + second stage under qemu-aarch64-static)
	Variant string   // debootstrap --variant; default "minbase"
	Include []string // extra packages (e.g. "ca-certificates", "curl", "gnupg", "dnf", "rpm")

	// Mirror is the Debian mirror to build from (http:, https: or file:
	// URL); "" takes $GPU_TESTBED_DEBIAN_MIRROR, else the machine's own
	// apt sources (mirror.go). normalized checks it (the one place it is
	// checked; mirrorFor takes a normalized Spec). It is not part of the cache key: every
	// mirror of Debian's archive serves the same suite with the same
	// Release file, signed by Debian and checked by debootstrap, so the
	// root's contents do not depend on which mirror built it (a mirror
	// that lags gives the packages of a few hours earlier, as building
	// earlier would; the cache keeps the first root either way).
	Mirror string
}

// layoutVersion changes whenever what Tarball does to a root after
// debootstrap changes, so cached tarballs of an older layout are not used.
const layoutVersion = "1"

var (
	namePattern    = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	packagePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
)

// normalized fills the defaults and checks every field, so a bad Spec fails
// before debootstrap runs.
func (s Spec) normalized() (Spec, error) {
	if s.Arch == "" {
		s.Arch = "amd64"
	}
	if s.Variant == "" {
		s.Variant = "minbase"
	}
	if !namePattern.MatchString(s.Suite) {
		return s, fmt.Errorf("debroot: Spec.Suite %q is not a Debian suite name: use a codename such as \"bookworm\" or \"bullseye\"", s.Suite)
	}
	if s.Arch != "amd64" && s.Arch != "arm64" {
		return s, fmt.Errorf("debroot: Spec.Arch %q is not supported: use \"amd64\" or \"arm64\"", s.Arch)
	}
	if !namePattern.MatchString(s.Variant) {
		return s, fmt.Errorf("debroot: Spec.Variant %q is not a debootstrap variant: use \"minbase\" (default) or another --variant of debootstrap(8)", s.Variant)
	}
	if s.Mirror != "" {
		if err := checkMirrorURI(s.Mirror); err != nil {
			return s, fmt.Errorf("debroot: Spec.Mirror (gpu-testbed rootfs --mirror) %q: %w", s.Mirror, err)
		}
	}
	include := slices.Clone(s.Include)
	for _, p := range include {
		if !packagePattern.MatchString(p) {
			return s, fmt.Errorf("debroot: Spec.Include has %q, which is not a Debian package name", p)
		}
	}
	slices.Sort(include)
	s.Include = slices.Compact(include)
	return s, nil
}

// key names the cached tarball: suite, arch and variant for people, and a
// hash of the includes and the layout version for uniqueness. The mirror
// is left out on purpose (see Spec.Mirror).
func (s Spec) key() string {
	sum := sha256.Sum256([]byte(layoutVersion + "\n" + strings.Join(s.Include, ",")))
	return fmt.Sprintf("%s-%s-%s-%s", s.Suite, s.Arch, s.Variant, hex.EncodeToString(sum[:])[:12])
}

// foreign reports whether the root's architecture differs from the host's
// and so needs a second stage under qemu-user.
func (s Spec) foreign() bool { return s.Arch != hostArch() }

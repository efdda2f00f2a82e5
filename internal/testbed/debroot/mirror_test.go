package debroot

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMirrorFromTheMachinesAptSources reads the fixture apt directories
// under testdata/apt as a machine's /etc/apt and checks which mirror a root
// would be built from.
func TestMirrorFromTheMachinesAptSources(t *testing.T) {
	for _, tc := range []struct {
		description string
		dir         string
		want        string
		wantFrom    string
	}{
		{
			"a deb822 debian.sources as Debian 12 cloud images write it: the bookworm suite of the archive entry, not -updates or -security; files apt ignores (*.disabled-by-farm) are not read",
			"deb822-machine", "http://debian.mirror.example/debian", "sources.list.d/debian.sources:1",
		},
		{
			"a one-line sources.list with comments, deb-src, bracketed options with spaces and a trailing comment: the deb entry, trailing slash dropped",
			"oneline-options", "https://mirror.example.com/debian", "sources.list:5",
		},
		{
			"deb822 with a disabled stanza, a deb-src-only stanza, lower-case field names and continuation lines: the first URI of the enabled deb stanza whose components include main",
			"deb822-disabled", "https://current.example/debian", "sources.list.d/debian.sources:12",
		},
		{
			"NVIDIA's flat CUDA repository, a vendor repository reusing bookworm main under its own key, a codename-less vendor suite and a component other than main come first: the Debian mirror signed by Debian's keyrings is chosen",
			"third-party-first", "http://company.example/debian", "sources.list.d/02-stable.list:2",
		},
		{
			"a cdrom: entry then a file: mirror: the file: mirror",
			"file-uri", "file:/srv/mirror/debian", "sources.list:2",
		},
		{
			"sources.list is read before sources.list.d, and a moving alias (stable) is a release suite",
			"list-before-parts", "https://first.example/debian", "sources.list:1",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			dir := filepath.Join("testdata", "apt", tc.dir)
			got, err := mirrorFor("", "", dir)
			if err != nil {
				t.Fatalf("mirrorFor: %v", err)
			}
			if got.URI != tc.want || got.From != filepath.Join(dir, tc.wantFrom) {
				t.Errorf("mirror = %s from %s, want %s from %s", got.URI, got.From, tc.want, filepath.Join(dir, tc.wantFrom))
			}
		})
	}
}

func TestMirrorErrorNamesTheFilesReadAndTheOverride(t *testing.T) {
	for _, tc := range []struct {
		description string
		dir         string
		wantFiles   []string
	}{
		{
			"only -security (deb822 and the old bullseye/updates form), -updates and -backports suites",
			"security-only", []string{"sources.list", "sources.list.d/debian.sources"},
		},
		{
			"only URIs debootstrap cannot fetch from (mirror+file:, tor+http:) and the experimental suite",
			"unusable", []string{"sources.list.d/debian.list"},
		},
		{
			"a Debian suite signed by an inline key, which is not known to be Debian's",
			"inline-key", []string{"sources.list.d/debian.sources"},
		},
		{
			"no sources at all",
			"empty", []string{"none of", "sources.list.d/*.list", "sources.list.d/*.sources"},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			dir := filepath.Join("testdata", "apt", tc.dir)
			got, err := mirrorFor("", "", dir)
			if err == nil {
				t.Fatalf("mirrorFor = %s from %s, want an error", got.URI, got.From)
			}
			for _, want := range append(tc.wantFiles, MirrorEnv+"=", "gpu-testbed rootfs --mirror") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestMirrorOverrides(t *testing.T) {
	machine := filepath.Join("testdata", "apt", "deb822-machine")
	for _, tc := range []struct {
		description    string
		explicit, env  string
		want, wantFrom string
	}{
		{"the variable overrides the machine's sources", "", "http://proxy.example:3142/debian/", "http://proxy.example:3142/debian", "$" + MirrorEnv},
		{"Spec.Mirror (rootfs --mirror) overrides the variable", "file:///srv/debian", "http://proxy.example:3142/debian", "file:///srv/debian", "Spec.Mirror"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			got, err := mirrorFor(tc.explicit, tc.env, machine)
			if err != nil || got.URI != tc.want || got.From != tc.wantFrom {
				t.Errorf("mirrorFor = %+v, %v; want %s from %s", got, err, tc.want, tc.wantFrom)
			}
		})
	}
	for _, tc := range []struct {
		description   string
		explicit, env string
		want          string
	}{
		{"a variable that is no URL debootstrap can fetch from is refused, naming the variable", "", "mirror.example/debian", MirrorEnv},
		{"a variable with an unsupported scheme is refused", "", "ftp://mirror.example/debian", "http:, https: and file:"},
		{"an explicit mirror without a host is refused, naming the flag", "https:///debian", "", "--mirror"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			_, err := mirrorFor(tc.explicit, tc.env, machine)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("mirrorFor(%q, %q) = %v, want an error naming %s", tc.explicit, tc.env, err, tc.want)
			}
		})
	}
}

func TestSpecRefusesABadMirrorBeforeLookingAtTheCache(t *testing.T) {
	_, err := Spec{Suite: "trixie", Mirror: "deb.example bookworm main"}.normalized()
	if err == nil || !strings.Contains(err.Error(), "Spec.Mirror") {
		t.Fatalf("normalized() = %v, want an error naming Spec.Mirror", err)
	}
}

func TestSpecKeyDoesNotDependOnTheMirror(t *testing.T) {
	a, _ := Spec{Suite: "trixie", Mirror: "http://one.example/debian"}.normalized()
	b, _ := Spec{Suite: "trixie", Mirror: "file:///srv/debian"}.normalized()
	c, _ := Spec{Suite: "trixie"}.normalized()
	if a.key() != b.key() || a.key() != c.key() {
		t.Errorf("keys differ by mirror: %s, %s, %s (the same suite from any mirror is the same root)", a.key(), b.key(), c.key())
	}
}

package debroot

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMirrorFromTheMachinesAptSources reads the fixture roots under
// testdata/roots as a machine's / (their etc/apt as its /etc/apt) and
// checks which mirror a trixie or bookworm amd64 root would be built from.
func TestMirrorFromTheMachinesAptSources(t *testing.T) {
	for _, tc := range []struct {
		description string
		dir         string
		want        string
		wantFrom    string
	}{
		{
			"a deb822 debian.sources with plain URLs and a comment line in a stanza: the bookworm suite of the archive entry, not -updates or -security; files apt ignores (*.disabled-by-farm) are not read",
			"deb822-machine", "http://debian.mirror.example/debian", "sources.list.d/debian.sources:1",
		},
		{
			"a deb822 debian.sources as Debian 12 cloud images write it (URIs: mirror+file:///etc/apt/mirrors/debian.list): the list's URL, read under the same root, from the list's line",
			"debian12-cloud", "https://cloud.mirror.example/debian", "mirrors/debian.list:1",
		},
		{
			"one-line mirror+ entries: a mirror+http: list is skipped (no fetch), a missing list is skipped, mirror+file:/path (one slash) is read; comments, blank lines and cdrom: in the list are passed over and tab-separated tags dropped",
			"mirror-list-options", "http://primary.example/debian", "mirrors/debian.list:4",
		},
		{
			"signed-by debian-archive-removed-keys.gpg is no Debian archive keyring, a vendor keyring next to a fingerprint is a third party's, a fingerprint alone (apt's signed-by=<fingerprint>!) is accepted",
			"signed-by", "http://fingerprint.example/debian", "sources.list:3",
		},
		{
			"deb822: a line of spaces and a tab continues the stanza (apt ends a stanza only at an empty line), a CRLF empty line ends it",
			"deb822-blank-spaces", "http://spaces.example/debian", "sources.list.d/debian.sources:1",
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
			root := filepath.Join("testdata", "roots", tc.dir)
			dir := filepath.Join(root, "etc", "apt")
			got, err := mirrorFor(Spec{Suite: "trixie", Arch: "amd64"}, "", root)
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
			"only URIs debootstrap cannot fetch from (tor+http:, a mirror+file: list that does not exist) and the experimental suite",
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
			root := filepath.Join("testdata", "roots", tc.dir)
			got, err := mirrorFor(Spec{Suite: "trixie", Arch: "amd64"}, "", root)
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
	machine := filepath.Join("testdata", "roots", "deb822-machine")
	for _, tc := range []struct {
		description    string
		explicit, env  string
		want, wantFrom string
	}{
		{"the variable overrides the machine's sources", "", "http://proxy.example:3142/debian/", "http://proxy.example:3142/debian", "$" + MirrorEnv},
		{"Spec.Mirror (rootfs --mirror) overrides the variable", "file:///srv/debian", "http://proxy.example:3142/debian", "file:///srv/debian", "Spec.Mirror"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			got, err := mirrorFor(Spec{Suite: "trixie", Arch: "amd64", Mirror: tc.explicit}, tc.env, machine)
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
	} {
		t.Run(tc.description, func(t *testing.T) {
			_, err := mirrorFor(Spec{Suite: "trixie", Arch: "amd64", Mirror: tc.explicit}, tc.env, machine)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("mirrorFor(%q, %q) = %v, want an error naming %s", tc.explicit, tc.env, err, tc.want)
			}
		})
	}
}

// TestSpecRefusesABadMirrorBeforeLookingAtTheCache: normalized is the one
// place Spec.Mirror is checked (mirrorFor takes a normalized Spec), with
// one prefix naming the field and the flag.
func TestSpecRefusesABadMirrorBeforeLookingAtTheCache(t *testing.T) {
	for _, bad := range []string{"deb.example bookworm main", "https:///debian", "ftp://mirror.example/debian"} {
		_, err := Spec{Suite: "trixie", Mirror: bad}.normalized()
		if err == nil || !strings.Contains(err.Error(), "debroot: Spec.Mirror (gpu-testbed rootfs --mirror) "+strconv.Quote(bad)) {
			t.Errorf("normalized() with Mirror %q = %v, want an error naming Spec.Mirror, --mirror and the URL", bad, err)
		}
	}
}

// TestMirrorForASuiteAndArchitecture: with partial mirrors, an entry of
// the wanted suite comes before an earlier one of another suite, and an
// entry whose arch options leave the architecture out is passed over.
func TestMirrorForASuiteAndArchitecture(t *testing.T) {
	root := filepath.Join("testdata", "roots", "partial-mirrors")
	list := filepath.Join(root, "etc", "apt", "sources.list")
	parts := filepath.Join(root, "etc", "apt", "sources.list.d", "debian.sources")
	for _, tc := range []struct {
		suite, arch    string
		want, wantFrom string
	}{
		{"trixie", "amd64", "http://amd64-only.example/debian", list + ":1"},
		{"trixie", "arm64", "http://all.example/debian", list + ":4"},
		{"bookworm", "amd64", "http://bookworm-only.example/debian", list + ":2"},
		{"bookworm", "arm64", "http://bookworm-only.example/debian", list + ":2"},
		{"bullseye", "amd64", "http://amd64-only.example/debian", list + ":1"},
		{"forky", "amd64", "http://deb822-amd64.example/debian", parts + ":1"},
		{"forky", "arm64", "http://deb822-any.example/debian", parts + ":7"},
	} {
		t.Run(tc.suite+"/"+tc.arch, func(t *testing.T) {
			got, err := mirrorFor(Spec{Suite: tc.suite, Arch: tc.arch}, "", root)
			if err != nil || got.URI != tc.want || got.From != tc.wantFrom {
				t.Errorf("mirrorFor = %+v, %v; want %s from %s", got, err, tc.want, tc.wantFrom)
			}
		})
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

// TestOnlyTheSourcesFilesAptReads makes a sources.list.d (at test time: a
// ':' in a committed file name is no valid Go module file path) whose
// names apt does not read (apt-pkg/contrib/fileutl.cc) come first: each
// names a wrong mirror, and the one file apt reads, zz:debian.list (':' is
// allowed), names the right one.
func TestOnlyTheSourcesFilesAptReads(t *testing.T) {
	root := t.TempDir()
	parts := filepath.Join(root, "etc", "apt", "sources.list.d")
	if err := os.MkdirAll(filepath.Join(parts, "dir.list"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrong := map[string]string{
		".hidden.list":   "deb http://hidden.example/debian trixie main\n",
		"a b.list":       "deb http://space.example/debian trixie main\n",
		"a~.list":        "deb http://tilde.example/debian trixie main\n",
		"b+c.sources":    "Types: deb\nURIs: http://plus.example/debian\nSuites: trixie\nComponents: main\n",
		"c.list.":        "deb http://period.example/debian trixie main\n",
		"d.list.save":    "deb http://save.example/debian trixie main\n",
		"zz:debian.list": "deb http://colon.example/debian trixie main\n",
	}
	for name, data := range wrong {
		if err := os.WriteFile(filepath.Join(parts, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := mirrorFor(Spec{Suite: "trixie", Arch: "amd64"}, "", root)
	if want := filepath.Join(parts, "zz:debian.list") + ":1"; err != nil || got.URI != "http://colon.example/debian" || got.From != want {
		t.Errorf("mirrorFor = %+v, %v; want http://colon.example/debian from %s", got, err, want)
	}
	for _, tc := range []struct {
		name string
		read bool
	}{
		{"debian.sources", true}, {"x_y-z.list", true}, {"a:b.list", true},
		{".debian.list", false}, {"a b.list", false}, {"a~.list", false}, {"a+b.list", false},
		{"debian.list.", false}, {"debian.list.save", false}, {"debian", false}, {"débian.list", false},
	} {
		if got := aptReadsPart(tc.name); got != tc.read {
			t.Errorf("aptReadsPart(%q) = %v, want %v", tc.name, got, tc.read)
		}
	}
}

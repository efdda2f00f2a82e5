package debroot

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MirrorEnv names the environment variable that overrides the Debian mirror
// a root is built from (Spec.Mirror, gpu-testbed rootfs --mirror, overrides
// it in turn).
const MirrorEnv = "GPU_TESTBED_DEBIAN_MIRROR"

// aptRoot is the root the machine's apt configuration is read under
// (<root>/etc/apt, and the mirror lists mirror+file: entries name); tests
// point mirrorFor at fixture roots instead.
const aptRoot = "/"

// mirrorChoice is the mirror a build uses and where it came from, for the
// build log and for errors.
type mirrorChoice struct {
	URI  string
	From string // "Spec.Mirror", "$GPU_TESTBED_DEBIAN_MIRROR", or "<file>:<line>"
}

// mirrorFor chooses the mirror spec's root is built from: the explicit one
// (Spec.Mirror, set by gpu-testbed rootfs --mirror; normalized has checked
// it, the one place it is checked), else $GPU_TESTBED_DEBIAN_MIRROR, else
// the machine's own apt sources under root/etc/apt (see archiveSource for
// which entry; spec's suite and architecture choose among them). The mirror
// is resolved only when a root is built: a cached root needs none.
func mirrorFor(spec Spec, env, root string) (mirrorChoice, error) {
	if spec.Mirror != "" {
		return mirrorChoice{URI: strings.TrimRight(spec.Mirror, "/"), From: "Spec.Mirror"}, nil
	}
	if env != "" {
		if err := checkMirrorURI(env); err != nil {
			return mirrorChoice{}, fmt.Errorf("%s=%q: %w", MirrorEnv, env, err)
		}
		return mirrorChoice{URI: strings.TrimRight(env, "/"), From: "$" + MirrorEnv}, nil
	}
	dir := filepath.Join(root, "etc", "apt")
	sources, read, err := readAptSources(root)
	if err != nil {
		return mirrorChoice{}, err
	}
	if src, ok := archiveSource(sources, spec.Suite, spec.Arch); ok {
		return mirrorChoice{URI: strings.TrimRight(src.URI, "/"), From: fmt.Sprintf("%s:%d", src.File, src.Line)}, nil
	}
	files := "none of " + filepath.Join(dir, "sources.list") + ", " + filepath.Join(dir, "sources.list.d", "*.list") + ", " + filepath.Join(dir, "sources.list.d", "*.sources") + " exists"
	if len(read) > 0 {
		files = "read " + strings.Join(read, ", ")
	}
	return mirrorChoice{}, fmt.Errorf("the machine's apt sources name no mirror of Debian's archive for %s %s (%s; "+
		"wanted an enabled deb entry with an http:, https: or file: URI (or a mirror+file: list of them), a Debian release suite such as bookworm or trixie, "+
		"the main component, an architecture list that has %s, and not signed by a third-party key): set %s=<mirror URL> or pass gpu-testbed rootfs --mirror <mirror URL>",
		spec.Suite, spec.Arch, files, spec.Arch, MirrorEnv)
}

// checkMirrorURI accepts what debootstrap can fetch from: http:, https:
// and file: URLs (debootstrap's functions, just_get).
func checkMirrorURI(uri string) error {
	u, err := url.Parse(uri)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return errors.New("no host: use a URL such as http://<host>/debian")
		}
	case "file":
		if u.Path == "" {
			return errors.New("no path: use a URL such as file:///srv/mirror/debian")
		}
	default:
		return errors.New("debootstrap fetches only from http:, https: and file: URLs")
	}
	return nil
}

// aptSource is one (URI, suite) pair of a deb entry of the apt sources.
type aptSource struct {
	File       string
	Line       int // the entry's first line
	URI        string
	Suite      string
	Components []string
	SignedBy   string   // the signed-by option, "" when the entry has none
	Arch       []string // arch= / Architectures: the only architectures the entry serves; nil: any
	NotArch    []string // arch-= / Architectures-Remove: architectures it does not serve
}

// servesArch reports whether the entry's architecture options leave arch in.
func (s aptSource) servesArch(arch string) bool {
	if s.Arch != nil && !slices.Contains(s.Arch, arch) {
		return false
	}
	return !slices.Contains(s.NotArch, arch)
}

// readAptSources reads root/etc/apt/sources.list and then the files of
// root/etc/apt/sources.list.d that apt reads, in name order, as apt does.
// It resolves mirror+file: URIs under root (resolveMirrorLists). It returns
// the deb entries, the files it read, and an error only for a file it
// could not read.
func readAptSources(root string) ([]aptSource, []string, error) {
	dir := filepath.Join(root, "etc", "apt")
	var files []string
	if _, err := os.Stat(filepath.Join(dir, "sources.list")); err == nil {
		files = append(files, filepath.Join(dir, "sources.list"))
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sources.list.d"))
	for _, e := range entries { // os.ReadDir sorts by name, bytewise, as apt's std::sort does
		if e.Type().IsRegular() && aptReadsPart(e.Name()) {
			files = append(files, filepath.Join(dir, "sources.list.d", e.Name()))
		}
	}
	var sources []aptSource
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, files, fmt.Errorf("reading the machine's apt sources: %w", err)
		}
		if strings.HasSuffix(f, ".sources") {
			sources = append(sources, parseDeb822Sources(f, string(data))...)
		} else {
			sources = append(sources, parseOneLineSources(f, string(data))...)
		}
	}
	sources, lists := resolveMirrorLists(root, sources)
	return sources, append(files, lists...), nil
}

// aptReadsPart reports whether apt reads a file of sources.list.d by this
// name: apt-pkg/contrib/fileutl.cc, GetListOfFilesInDir with the extensions
// "list" and "sources" (as sourcelist.cc asks), skips names starting with
// '.', names whose extension (after the last '.') is another, names with a
// character other than ASCII letters, digits, '_', '-', ':' and '.', and
// names ending in '.'. (It also skips what is not a regular file; the
// caller checks that.) So *.disabled, *.save, "backup~.list" and
// "a b.list" are not read; "x:y.list" is.
func aptReadsPart(name string) bool {
	if name == "" || name[0] == '.' || strings.HasSuffix(name, ".") {
		return false
	}
	ext := name[strings.LastIndexByte(name, '.')+1:]
	if !strings.Contains(name, ".") || (ext != "list" && ext != "sources") {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:.") == ""
}

// resolveMirrorLists replaces each entry whose URI uses apt's mirror
// method with a file list, mirror+file:PATH (Debian's cloud images write
// "URIs: mirror+file:///etc/apt/mirrors/debian.list"), by the first URL of
// that list debootstrap can fetch from, with File and Line naming the
// list's line. The list (apt's methods/mirror.cc) holds one URL per line,
// optionally followed by tab-separated tags (priority:, type:, arch:…);
// blank lines and lines starting with '#' are skipped. PATH is read under
// root, as the apt directory is. The tags are not read (chosen: the
// first usable URL, which is what a one-mirror list such as the cloud
// images' gives; apt itself picks by priority and a per-machine random
// order). mirror+http: and mirror+https: lists are skipped: reading them
// means a network fetch before debootstrap runs, and apt refuses file:
// URLs in such a list, which a plain reading would have to copy. An entry
// whose list cannot be read or names no usable URL is dropped; the list
// files read are returned for the error that names what was read.
func resolveMirrorLists(root string, sources []aptSource) ([]aptSource, []string) {
	var out []aptSource
	var lists []string
	for _, s := range sources {
		rest, ok := strings.CutPrefix(s.URI, "mirror+file:")
		if !ok {
			out = append(out, s)
			continue
		}
		// mirror+file:///p and mirror+file:/p both name /p.
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		}
		if !strings.HasPrefix(rest, "/") {
			continue
		}
		list := filepath.Join(root, filepath.FromSlash(rest))
		data, err := os.ReadFile(list)
		if err != nil {
			continue
		}
		if !slices.Contains(lists, list) {
			lists = append(lists, list)
		}
		for n, line := range strings.Split(string(data), "\n") {
			uri, _, _ := strings.Cut(line, "\t")
			uri = strings.TrimSpace(uri)
			if uri == "" || strings.HasPrefix(uri, "#") || checkMirrorURI(uri) != nil {
				continue
			}
			s.URI, s.File, s.Line = uri, list, n+1
			out = append(out, s)
			break
		}
	}
	return out, lists
}

// parseOneLineSources reads the one-line format of sources.list(5):
// `deb [ option=value ... ] uri suite [component ...]`. Everything after
// a '#' is a comment (apt drops it the same way); deb-src and other types
// are skipped; of the options signed-by, arch= and arch-= are kept.
func parseOneLineSources(file, data string) []aptSource {
	var out []aptSource
	for n, line := range strings.Split(data, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		signedBy := ""
		var arch, notArch []string
		if strings.HasPrefix(fields[0], "[") {
			// Options may be written "[a=b c=d]" or "[ a=b ]": gather up to "]".
			var opts []string
			for len(fields) > 0 {
				f := fields[0]
				fields = fields[1:]
				end := strings.HasSuffix(f, "]")
				f = strings.TrimSuffix(strings.TrimPrefix(f, "["), "]")
				if f != "" {
					opts = append(opts, f)
				}
				if end {
					break
				}
			}
			for _, o := range opts {
				k, v, ok := strings.Cut(o, "=")
				switch {
				case !ok:
				case strings.EqualFold(k, "signed-by"):
					signedBy = v
				case strings.EqualFold(k, "arch"):
					arch = strings.Split(v, ",")
				case strings.EqualFold(k, "arch-"):
					notArch = strings.Split(v, ",")
				}
			}
		}
		if len(fields) < 2 {
			continue
		}
		out = append(out, aptSource{File: file, Line: n + 1, URI: fields[0], Suite: fields[1], Components: fields[2:], SignedBy: signedBy, Arch: arch, NotArch: notArch})
	}
	return out
}

// parseDeb822Sources reads the deb822 format of sources.list(5): stanzas
// separated by blank lines, fields Types, URIs, Suites, Components,
// Enabled, Signed-By, Architectures and Architectures-Remove (names
// case-insensitive, continuation lines start with a space or tab, lines
// starting with '#' are comments). Only an empty line (or a lone "\r")
// ends a stanza: a line of spaces and tabs is a continuation line, as in
// apt's pkgTagSection::Scan (apt-pkg/tagfile.cc), which ends a record only
// at a double newline. A stanza with "Enabled: no" is skipped, as apt
// skips it; one entry per URI and suite.
func parseDeb822Sources(file, data string) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	start, last := 0, ""
	flush := func() {
		defer func() { fields, last = map[string]string{}, "" }()
		if len(fields) == 0 || !slices.Contains(strings.Fields(fields["types"]), "deb") || isFalse(fields["enabled"]) {
			return
		}
		signedBy := strings.TrimSpace(fields["signed-by"])
		if strings.Contains(signedBy, "\n") || strings.Contains(signedBy, "BEGIN PGP") {
			signedBy = "<inline key>"
		}
		var arch, notArch []string
		if v, ok := fields["architectures"]; ok {
			arch = strings.Fields(v)
		}
		if v, ok := fields["architectures-remove"]; ok {
			notArch = strings.Fields(v)
		}
		for _, uri := range strings.Fields(fields["uris"]) {
			for _, suite := range strings.Fields(fields["suites"]) {
				out = append(out, aptSource{File: file, Line: start, URI: uri, Suite: suite, Components: strings.Fields(fields["components"]), SignedBy: signedBy, Arch: arch, NotArch: notArch})
			}
		}
	}
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case line == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += "\n" + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if len(fields) == 0 {
				start = n + 1
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

// isFalse is apt's reading of a boolean field as false (StringToBool:
// no, false, without, off, disable, 0).
func isFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "no", "false", "without", "off", "disable", "0":
		return true
	}
	return false
}

// debianSuites are the names of Debian's release suites: every codename
// (Debian's release list, debian.org/releases, and distro-info-data's
// debian.csv, which also names duke for Debian 15) and the moving aliases.
// experimental is left out: it is no complete archive debootstrap can
// build from. A new codename goes here when Debian announces it.
var debianSuites = []string{
	"buzz", "rex", "bo", "hamm", "slink", "potato", "woody", "sarge", "etch", "lenny", "squeeze",
	"wheezy", "jessie", "stretch", "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
	"oldoldstable", "oldstable", "stable", "testing", "unstable",
}

// archiveSource chooses, from the machine's apt sources in apt's order,
// the entry that serves Debian's main archive for suite and arch: the
// first one whose suite is suite itself, else the first one with another
// release suite. An entry qualifies by this rule:
//   - its suite is a Debian release suite itself (bookworm, trixie,
//     stable, sid…), so a -security, -updates, -backports or
//     -proposed-updates suite (a separate archive, or not a full release)
//     and a flat repository ("/", as NVIDIA's CUDA repository) are not;
//   - its components include main;
//   - its architecture options (arch=, arch-=; deb822 Architectures,
//     Architectures-Remove) do not leave arch out;
//   - its URI is one debootstrap can fetch from (http:, https:, file:;
//     not cdrom:, mirror+…:, tor+…:);
//   - it is not signed by a third party's key: signed-by, when given,
//     names one of Debian's archive keyrings (debian-archive-*.gpg/.asc/.pgp,
//     not debian-archive-removed-keys, which holds keys Debian retired),
//     or key fingerprints, so a vendor repository that reuses a Debian codename and main
//     ("deb [signed-by=/usr/share/keyrings/vendor.gpg] https://… bookworm main")
//     is not taken for a mirror. A company mirror of Debian serves
//     Debian's own signed Release files, so Debian's keyring (or none, the
//     trusted.gpg.d default) verifies it. A fingerprint (apt allows
//     "signed-by=<fingerprint>", which picks that key out of the default
//     keyrings) names a key this rule cannot tell apart: chosen: it counts
//     as Debian's, as an entry without signed-by does, since it trusts no
//     more than the default keyrings; an inline key ("Signed-By:" with a
//     key block) and any other keyring file count as a third party's.
//     debootstrap checks the Release file against Debian's keyring in
//     either case, and its failure names the mirror and the override.
//
// A full mirror of the archive serves every release suite and
// architecture, so a bookworm machine's mirror builds trixie roots; a
// partial one (a company mirror of bookworm only, or of amd64 only) does
// not, which is why an entry of the suite itself comes first and arch
// options are followed. What the entry does not say (a mirror that lacks
// trixie but names only bookworm) shows only when debootstrap fails.
func archiveSource(sources []aptSource, suite, arch string) (aptSource, bool) {
	var other *aptSource
	for i, s := range sources {
		if !slices.Contains(debianSuites, s.Suite) || !slices.Contains(s.Components, "main") || !s.servesArch(arch) {
			continue
		}
		if checkMirrorURI(s.URI) != nil {
			continue
		}
		if s.SignedBy != "" && !isDebianKeyring(s.SignedBy) {
			continue
		}
		if s.Suite == suite {
			return s, true
		}
		if other == nil {
			other = &sources[i]
		}
	}
	if other != nil {
		return *other, true
	}
	return aptSource{}, false
}

// isDebianKeyring reports whether a signed-by value names only Debian's
// archive keyrings (debian-archive-keyring's files, but not
// debian-archive-removed-keys.*) or key fingerprints (see archiveSource);
// signed-by may list several, separated by commas (or spaces in deb822).
func isDebianKeyring(signedBy string) bool {
	keys := strings.FieldsFunc(signedBy, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		if isFingerprint(k) {
			continue
		}
		base := filepath.Base(k)
		if !strings.HasPrefix(base, "debian-archive-") || strings.HasPrefix(base, "debian-archive-removed-keys.") {
			return false
		}
	}
	return true
}

// isFingerprint reports whether a signed-by element is an OpenPGP key
// fingerprint as apt takes it: 40 (v4) or 64 (v5) hex digits, optionally
// ending in '!' (that exact key, not a subkey).
func isFingerprint(k string) bool {
	k = strings.TrimSuffix(k, "!")
	if len(k) != 40 && len(k) != 64 {
		return false
	}
	return strings.Trim(k, "0123456789abcdefABCDEF") == ""
}

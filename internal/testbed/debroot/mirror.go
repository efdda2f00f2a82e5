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

// aptDir is where the machine's apt sources are read from; tests point
// mirrorFor at fixture directories instead.
const aptDir = "/etc/apt"

// mirrorChoice is the mirror a build uses and where it came from, for the
// build log and for errors.
type mirrorChoice struct {
	URI  string
	From string // "Spec.Mirror", "$GPU_TESTBED_DEBIAN_MIRROR", or "<file>:<line>"
}

// mirrorFor chooses the mirror a root is built from: the explicit one
// (Spec.Mirror, set by gpu-testbed rootfs --mirror), else $GPU_TESTBED_DEBIAN_MIRROR,
// else the machine's own apt sources under dir (see archiveSource for
// which entry). The mirror is resolved only when a root is built: a cached
// root needs none.
func mirrorFor(explicit, env, dir string) (mirrorChoice, error) {
	if explicit != "" {
		if err := checkMirrorURI(explicit); err != nil {
			return mirrorChoice{}, fmt.Errorf("Spec.Mirror (gpu-testbed rootfs --mirror) %q: %w", explicit, err)
		}
		return mirrorChoice{URI: strings.TrimRight(explicit, "/"), From: "Spec.Mirror"}, nil
	}
	if env != "" {
		if err := checkMirrorURI(env); err != nil {
			return mirrorChoice{}, fmt.Errorf("%s=%q: %w", MirrorEnv, env, err)
		}
		return mirrorChoice{URI: strings.TrimRight(env, "/"), From: "$" + MirrorEnv}, nil
	}
	sources, read, err := readAptSources(dir)
	if err != nil {
		return mirrorChoice{}, err
	}
	if src, ok := archiveSource(sources); ok {
		return mirrorChoice{URI: strings.TrimRight(src.URI, "/"), From: fmt.Sprintf("%s:%d", src.File, src.Line)}, nil
	}
	files := "none of " + filepath.Join(dir, "sources.list") + ", " + filepath.Join(dir, "sources.list.d", "*.list") + ", " + filepath.Join(dir, "sources.list.d", "*.sources") + " exists"
	if len(read) > 0 {
		files = "read " + strings.Join(read, ", ")
	}
	return mirrorChoice{}, fmt.Errorf("the machine's apt sources name no mirror of Debian's archive (%s; "+
		"wanted an enabled deb entry with an http:, https: or file: URI, a Debian release suite such as bookworm or trixie "+
		"and the main component, not signed by a third-party key): set %s=<mirror URL> or pass gpu-testbed rootfs --mirror <mirror URL>",
		files, MirrorEnv)
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
	SignedBy   string // the signed-by option, "" when the entry has none
}

// readAptSources reads dir/sources.list and then dir/sources.list.d/*.list
// and *.sources in name order, as apt does (other names there, such as
// *.disabled or *.save, apt ignores too). It returns the deb entries, the
// files it read, and an error only for a file it could not read.
func readAptSources(dir string) ([]aptSource, []string, error) {
	var files []string
	if _, err := os.Stat(filepath.Join(dir, "sources.list")); err == nil {
		files = append(files, filepath.Join(dir, "sources.list"))
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "sources.list.d", "*"))
	slices.Sort(parts)
	for _, p := range parts {
		if strings.HasSuffix(p, ".list") || strings.HasSuffix(p, ".sources") {
			files = append(files, p)
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
	return sources, files, nil
}

// parseOneLineSources reads the one-line format of sources.list(5):
// `deb [ option=value ... ] uri suite [component ...]`. Everything after
// a '#' is a comment (apt drops it the same way); deb-src and other types
// are skipped; of the options only signed-by is kept.
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
				if k, v, ok := strings.Cut(o, "="); ok && strings.EqualFold(k, "signed-by") {
					signedBy = v
				}
			}
		}
		if len(fields) < 2 {
			continue
		}
		out = append(out, aptSource{File: file, Line: n + 1, URI: fields[0], Suite: fields[1], Components: fields[2:], SignedBy: signedBy})
	}
	return out
}

// parseDeb822Sources reads the deb822 format of sources.list(5): stanzas
// separated by blank lines, fields Types, URIs, Suites, Components,
// Enabled and Signed-By (names case-insensitive, continuation lines start
// with a space, lines starting with '#' are comments). A stanza with
// "Enabled: no" is skipped, as apt skips it; one entry per URI and suite.
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
		for _, uri := range strings.Fields(fields["uris"]) {
			for _, suite := range strings.Fields(fields["suites"]) {
				out = append(out, aptSource{File: file, Line: start, URI: uri, Suite: suite, Components: strings.Fields(fields["components"]), SignedBy: signedBy})
			}
		}
	}
	for n, line := range strings.Split(data, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.TrimSpace(line) == "":
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
// the first entry that serves Debian's main archive, by this rule:
//   - its suite is a Debian release suite itself (bookworm, trixie,
//     stable, sid…), so a -security, -updates, -backports or
//     -proposed-updates suite (a separate archive, or not a full release)
//     and a flat repository ("/", as NVIDIA's CUDA repository) are not;
//   - its components include main;
//   - its URI is one debootstrap can fetch from (http:, https:, file:;
//     not cdrom:, mirror+…:, tor+…:);
//   - it is not signed by a third party's key: signed-by, when given,
//     names one of Debian's archive keyrings (debian-archive-*.gpg/.asc/.pgp),
//     so a vendor repository that reuses a Debian codename and main
//     ("deb [signed-by=/usr/share/keyrings/vendor.gpg] https://… bookworm main")
//     is not taken for a mirror. A company mirror of Debian serves
//     Debian's own signed Release files, so Debian's keyring (or none, the
//     trusted.gpg.d default) verifies it.
//
// The suite the machine runs does not matter: any mirror of the archive
// serves every release suite, so a bookworm machine's mirror builds trixie
// roots.
func archiveSource(sources []aptSource) (aptSource, bool) {
	for _, s := range sources {
		if !slices.Contains(debianSuites, s.Suite) || !slices.Contains(s.Components, "main") {
			continue
		}
		if checkMirrorURI(s.URI) != nil {
			continue
		}
		if s.SignedBy != "" && !isDebianKeyring(s.SignedBy) {
			continue
		}
		return s, true
	}
	return aptSource{}, false
}

// isDebianKeyring reports whether a signed-by value names only Debian's
// archive keyrings (debian-archive-keyring's files; signed-by may list
// several, separated by commas).
func isDebianKeyring(signedBy string) bool {
	for _, k := range strings.Split(signedBy, ",") {
		if !strings.HasPrefix(filepath.Base(strings.TrimSpace(k)), "debian-archive-") {
			return false
		}
	}
	return true
}

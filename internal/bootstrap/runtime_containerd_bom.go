package bootstrap

import "bytes"

// A containerd config that starts with a UTF-8 byte order mark (EF BB BF,
// as some Windows editors save) loads in some containerd releases and not
// in others, by the TOML reader each uses for its config
// (services/server/config/config.go before 2.0,
// cmd/containerd/server/config/config.go from 2.0; versions from each tag's
// go.mod):
//
//   - containerd 1.4 and earlier: github.com/BurntSushi/toml v0.3.1
//     (toml.DecodeFile), which has no BOM handling and stops at it: "bare
//     keys cannot contain '\ufeff'" (BurntSushi/toml reads over a BOM only
//     from v0.4.0, commit b8ee995 "Read over BOM", 2021).
//   - containerd 1.5 to 1.7: github.com/pelletier/go-toml v1 (v1.8.1,
//     v1.9.3, v1.9.5; toml.LoadFile), whose LoadBytes skips a BOM since
//     "Support byte order mark" (#253, 2018): the file loads.
//   - containerd 2.0 and later: github.com/pelletier/go-toml/v2 (v2.2.3 in
//     2.0, v2.2.4 in 2.1 and 2.2, v2.3.0 in 2.3; toml.NewDecoder(f).Decode),
//     which has no BOM handling: "toml: invalid character at start of key:
//     ï" (go-toml/v2 v2.2.4 and v2.4.3 decoding such a file), and containerd
//     does not start.
//
// The runtime step edits such a file and keeps the mark (it changes only
// what it must). When `containerd --version` names a 2.x containerd,
// containerdConfigVersion refuses the file. When the version cannot be
// determined (no containerd binary in the root: k3s's and RKE2's embedded
// containerd, an image of another architecture), the plan warns; it warns as
// well for a containerd of 1.4 or earlier.

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte("\uFEFF")

// warnContainerdBOM warns, through h, when the containerd config at path,
// whose text is text, starts with a UTF-8 byte order mark that the
// containerd the plan is for may refuse: its version is unknown (ver, known
// from probeVersion), or 1.4 or earlier. A 2.x containerd is refused
// elsewhere (containerdConfigVersion); 1.5 to 1.7 read the file.
func warnContainerdBOM(h *Host, path string, text []byte, ver engineVersion, known bool) {
	if !bytes.HasPrefix(text, utf8BOM) {
		return
	}
	const fix = "remove the mark (the first 3 bytes, EF BB BF)"
	switch {
	case !known:
		h.Warn("%s starts with a UTF-8 byte order mark, which this edit keeps, and `containerd --version` gave no version: containerd 2.0 and later (TOML reader go-toml v2) and containerd 1.4 and earlier (BurntSushi/toml v0.3.1) refuse such a file and do not start; only containerd 1.5 to 1.7 (go-toml v1) skip the mark: %s unless this containerd is 1.5 to 1.7", path, fix)
	case !ver.atLeast(1, 5):
		h.Warn("%s starts with a UTF-8 byte order mark, which this edit keeps: containerd %s reads its config with BurntSushi/toml v0.3.1, which refuses such a file (as containerd 2.0 and later do; 1.5 to 1.7 skip the mark), so containerd does not start: %s", path, ver, fix)
	}
}

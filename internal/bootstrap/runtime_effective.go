package bootstrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// The engines merge several files into the config they run: containerd its
// main file and what it imports, CRI-O crio.conf and crio.conf.d. A setting
// in the file the runtime step writes is worth nothing when a file read
// after it says otherwise, and a default runtime removed from one file
// still holds when another sets it. This file computes the effective
// config — the files in the engine's order, and for a setting the file
// whose value wins — once, for both the plan (which must not say "up to
// date" while another file overrides it) and Verify (which names that
// file).

// configLayer is one config file an engine merges.
type configLayer struct {
	path string
	old  []byte // what is on disk (nil when the file is planned but new)
	doc  *tomledit.Doc
	// version is a containerd file's config version (1 when it has no
	// version key, as containerd reads it); 0 for other engines.
	version int64
}

// effectiveConfig is the files an engine merges, first to last; later
// files win.
type effectiveConfig struct {
	engine string
	layers []configLayer
	// wholeTable is how many leading segments of key name a table that a
	// later file replaces as a whole rather than key by key (containerd
	// before 2.0 replaces a plugin's table, CRI-O a runtime's); 0 when the
	// key is merged on its own.
	wholeTable func(key []string) int
	// runtimeBinary and defaultRuntime are where a file keeps the nvidia
	// runtime's binary and the default runtime's name.
	runtimeBinary  func(l configLayer) []string
	defaultRuntime func(l configLayer) []string
}

// setting is the value an engine ends up with for a key and the file it
// comes from; ok is false when no file sets it (file then names the file
// that took the key's whole table away, if one did).
type setting struct {
	value any
	file  string
	ok    bool
}

// lookup is the effective value of the key that key names in each file.
func (c *effectiveConfig) lookup(key func(l configLayer) []string) setting {
	for i := len(c.layers) - 1; i >= 0; i-- {
		l := c.layers[i]
		k := key(l)
		if n := c.wholeTable(k); n > 0 && n < len(k) && l.doc.Has(k[:n]...) {
			v, ok := l.doc.Get(k...)
			return setting{value: v, file: l.path, ok: ok}
		}
		if v, ok := l.doc.Get(k...); ok {
			return setting{value: v, file: l.path, ok: true}
		}
	}
	return setting{}
}

// paths are the files merged, first to last.
func (c *effectiveConfig) paths() []string {
	var out []string
	for _, l := range c.layers {
		out = append(out, l.path)
	}
	return out
}

// conflicts are the reasons the effective config does not run the nvidia
// runtime as want asks, each naming the file that decides it. ours is the
// file the runtime step writes the runtime into.
func (c *effectiveConfig) conflicts(want runtimeWant, ours string) []string {
	var out []string
	bin := c.lookup(c.runtimeBinary)
	switch {
	case !bin.ok && bin.file != "" && bin.file != ours:
		out = append(out, fmt.Sprintf("%s is read after %s and replaces the whole table the nvidia runtime is in without defining it, so %s would not know the nvidia runtime: add the nvidia runtime there or remove that table from it", bin.file, ours, c.engine))
	case !bin.ok:
		out = append(out, fmt.Sprintf("no file %s reads defines the nvidia runtime", c.engine))
	case bin.value != want.binary:
		out = append(out, fmt.Sprintf("%s sets the nvidia runtime's binary to %v, and %s reads it after %s, so that wins over %s: remove the nvidia runtime from %s (nvidia-ctk or the GPU operator may have written it) or set runtime.runtime_path to %v",
			bin.file, bin.value, c.engine, ours, want.binary, bin.file, bin.value))
	}
	def := c.lookup(c.defaultRuntime)
	switch {
	case want.setDefault && def.value != nvidiaRuntime && def.ok && def.file != ours:
		out = append(out, fmt.Sprintf("%s makes %v the default runtime and %s reads it after %s, so nvidia would not be the default: remove default runtime setting from %s or set runtime.set_as_default: false",
			def.file, def.value, c.engine, ours, def.file))
	case !want.setDefault && def.value == nvidiaRuntime:
		out = append(out, fmt.Sprintf("%s makes nvidia the default runtime, which runtime.set_as_default: false asks not to be: remove that setting from %s", def.file, def.file))
	}
	return out
}

// unsetNvidiaDefault removes a default runtime of "nvidia" from every file
// that sets it, as set_as_default: false asks, wherever the winning setting
// lives; it returns the changes, one per file, for files other than skip
// (the ones the plan already writes).
func (c *effectiveConfig) unsetNvidiaDefault(restart string, skip ...string) ([]Change, error) {
	var changes []Change
	for i, l := range c.layers {
		if slices.Contains(skip, l.path) {
			continue
		}
		key := c.defaultRuntime(l)
		if v, _ := l.doc.Get(key...); v != nvidiaRuntime {
			continue
		}
		doc, err := tomledit.Parse(l.old)
		if err != nil {
			return nil, editError(l.path, err)
		}
		if _, err := doc.Delete(key); err != nil {
			return nil, editError(l.path, err)
		}
		c.layers[i].doc = doc
		f := configFile{path: l.path, old: l.old, exists: true}
		if change, ok := f.change(doc.Bytes(), describeEdits("update", l.path, []string{"stop making nvidia the default runtime (set here, where it would win)"}), restart); ok {
			changes = append(changes, change)
		}
	}
	return changes, nil
}

// conflictError is the plan's error for a config that other files
// override.
func conflictError(engine string, conflicts []string) error {
	return fmt.Errorf("the nvidia runtime would not take effect as configured, because of the other files %s merges: %s", engine, strings.Join(conflicts, "; "))
}

// globInRoot is the files under the root that pattern matches, sorted as
// filepath.Glob sorts them; pattern may have wildcards in its last element
// only (containerd's imports and CRI-O's drop-ins do). The directory is
// resolved inside the root by Host.Path.
func globInRoot(h *Host, pattern string) ([]string, error) {
	dir, name := filepath.Split(filepath.Clean(pattern))
	if !strings.ContainsAny(name, "*?[") {
		if h.Exists(pattern) {
			return []string{filepath.Clean(pattern)}, nil
		}
		return nil, nil
	}
	entries, err := os.ReadDir(h.Path(dir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if ok, err := filepath.Match(name, e.Name()); err != nil {
			return nil, fmt.Errorf("%s: %w", pattern, err)
		} else if ok && !e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// readLayer reads and parses one config file; ok is false when it does
// not exist.
func readLayer(h *Host, path string) (configLayer, bool, error) {
	f, err := readConfigFile(h, path)
	if err != nil || !f.exists {
		return configLayer{}, false, err
	}
	doc, err := parseTOMLFile(f)
	if err != nil {
		return configLayer{}, false, err
	}
	return configLayer{path: path, old: f.old, doc: doc}, true, nil
}

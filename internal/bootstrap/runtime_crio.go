package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// CRI-O reads /etc/crio/crio.conf and then every file under
// /etc/crio/crio.conf.d in lexical order, later files winning
// (crio.conf.d(5); pkg/config UpdateFromPath walks the directory). The
// nvidia runtime goes into a drop-in of its own, 99-nvidia.conf, as
// nvidia-ctk does, so crio.conf stays the package's:
//
//	[crio.runtime]
//	default_runtime = "nvidia"          # only with set_as_default
//
//	[crio.runtime.runtimes.nvidia]
//	runtime_path = "/usr/bin/nvidia-container-runtime"
//	runtime_type = "oci"
//
// A runtime table in a drop-in replaces the whole runtime of that name
// (the TOML decoder makes a new map value), so the new table starts from
// the settings of the runtime nvidia wraps (the default runtime, runc or
// crun; crio.conf(5) crio.runtime.runtimes). CRI-O has injected CDI devices
// since 1.24 with no switch to turn on (cri-o "config,cli: add configuration
// for CDI"); enable_cdi needs nothing but a CRI-O that new. The spec
// directories are [crio.runtime] cdi_spec_dirs.
//
// NVIDIA Container Toolkit 1.18 and later write CRI-O's runtime into a
// drop-in of their own by default (`nvidia-ctk runtime configure
// --runtime=crio`, NVIDIA/nvidia-container-toolkit
// cmd/nvidia-ctk/runtime/configure/configure.go
// defaultCrioDropInConfigFilePath): /etc/crio/crio.conf.d/99-nvidia.toml
// from v1.20.0, /etc/crio/conf.d/99-nvidia.toml in v1.18.x and v1.19.x (a
// directory CRI-O does not read: its drop-ins are crio.conf.d, crio(8)
// --config-dir). The file holds [crio.runtime.runtimes.nvidia] with
// runtime_path and runtime_type = "oci" over the settings of runc or crun
// copied from crio.conf (pkg/config/engine/crio AddRuntimeWithOptions), and
// default_runtime = "nvidia" with --set-as-default. 99-nvidia.toml sorts
// after our 99-nvidia.conf ('t' after 'c'), so its nvidia runtime table
// replaces ours whole. The rule: a file CRI-O reads after ours that defines
// the nvidia runtime holds it; our drop-in then does not define the
// runtime (it keeps default_runtime and cdi_spec_dirs, which the toolkit's
// file does not set unless asked), and the plan judges that file's runtime
// (its runtime_path must be runtime.runtime_path) as CRI-O merges it.
const (
	defaultCRIOConfig = "/etc/crio/crio.conf"
	crioDropInName    = "99-nvidia.conf"
	// crioToolkitDropInName is nvidia-ctk's CRI-O drop-in (see above), and
	// crioToolkitOldDir where 1.18 and 1.19 put it.
	crioToolkitDropInName = "99-nvidia.toml"
	crioToolkitOldDir     = "/etc/crio/conf.d"
)

func crioRuntime(name string, keys ...string) []string {
	return append([]string{"crio", "runtime", "runtimes", name}, keys...)
}

var crioDefaultRuntime = []string{"crio", "runtime", "default_runtime"}

// crioDropInDir is the drop-in directory CRI-O reads after its main config
// (crio.conf.d(5)): crio.conf.d beside it.
func crioDropInDir(mainPath string) string {
	return filepath.Join(filepath.Dir(mainPath), "crio.conf.d")
}

func planCRIO(ctx context.Context, h *Host, want runtimeWant) ([]Change, error) {
	mainPath := configPathOr(want.configPath, defaultCRIOConfig)
	dropInDir := crioDropInDir(mainPath)
	dropIn := filepath.Join(dropInDir, crioDropInName)

	if want.enableCDI {
		if ver, known := probeVersion(ctx, h, engineCRIO); known && !ver.atLeast(1, 24) {
			return nil, fieldError("runtime.enable_cdi", "CRI-O %s cannot inject CDI devices (CRI-O 1.24 and later always can); upgrade CRI-O or set enable_cdi: false", ver)
		}
	}
	eff, ours, err := crioEffective(h, mainPath, dropInDir, dropIn)
	if err != nil {
		return nil, err
	}
	if old := filepath.Join(crioToolkitOldDir, crioToolkitDropInName); dropInDir == "/etc/crio/crio.conf.d" && h.Exists(old) {
		h.Warn("%s is where nvidia-ctk 1.18 and 1.19 write CRI-O's drop-in, but CRI-O reads %s, not %s, so that file does nothing: remove it (the nvidia runtime is configured in %s)", old, dropInDir, crioToolkitOldDir, dropInDir)
	}
	f := configFile{path: dropIn, old: eff.layers[ours].old, exists: eff.layers[ours].old != nil}
	doc := eff.layers[ours].doc
	var before []*tomledit.Doc
	for _, l := range eff.layers[:ours] {
		before = append(before, l.doc)
	}
	holder := crioRuntimeHolder(eff, ours)
	if holder != "" {
		h.Note("%s, which CRI-O reads after %s, defines the nvidia runtime (nvidia-ctk 1.18+ writes its drop-in there), so CRI-O uses that definition: %s does not define a second one", holder, dropIn, dropIn)
		// Our file is rebuilt from nothing with what it still has to
		// say; it is ours, so nothing of a user's is lost.
		doc, _ = tomledit.Parse(nil)
	}
	var after []*tomledit.Doc
	for _, l := range eff.layers[ours+1:] {
		after = append(after, l.doc)
	}
	did, err := editCRIODropIn(doc, before, after, want, holder == "")
	if err != nil {
		return nil, editError(dropIn, err)
	}
	eff.layers[ours].doc = doc
	if holder != "" && f.exists && !bytes.Equal(doc.Bytes(), f.old) && eff.layers[ours].old != nil {
		if old, err := tomledit.Parse(f.old); err == nil && old.Has(crioRuntime(nvidiaRuntime)...) {
			did = append([]string{"stop defining the nvidia runtime here (" + holder + " defines it, and CRI-O reads it later)"}, did...)
		}
		if len(did) == 0 {
			did = []string{"keep only what " + holder + " does not set"}
		}
	}
	verb := "update"
	if !f.exists {
		verb = "create"
	}
	var changes []Change
	switch {
	case doc.IsEmpty() && f.exists:
		changes = append(changes, Change{
			Summary: fmt.Sprintf("remove %s: %s defines the nvidia runtime, and nothing is left for this file to set", dropIn, holder),
			Ops:     []Op{RemoveOp{Path: dropIn}},
			Restart: "crio",
		})
	case doc.IsEmpty():
	default:
		if change, ok := f.change(doc.Bytes(), describeEdits(verb, dropIn, did), "crio"); ok {
			changes = append(changes, change)
		}
	}
	if !want.setDefault {
		more, err := eff.unsetNvidiaDefault("crio", dropIn)
		if err != nil {
			return nil, err
		}
		changes = append(changes, more...)
	}
	if conflicts := eff.conflicts(want, dropIn); len(conflicts) > 0 {
		return nil, conflictError("CRI-O", conflicts)
	}
	return changes, nil
}

// crioEffective is CRI-O's config as CRI-O merges it: the main file, then
// every file under the drop-in directory in the order filepath.Walk visits
// them (lexical, subdirectories included: pkg/config UpdateFromPath), each
// key overriding the files before, except that a runtime's table replaces
// the whole runtime of that name. Our drop-in is among them at its place
// (empty when it does not exist yet); ours is its index. A file that does
// not parse is a *ParseError: CRI-O would not start with it either.
func crioEffective(h *Host, mainPath, dropInDir, dropIn string) (eff *effectiveConfig, ours int, err error) {
	paths := []string{mainPath}
	root := h.Path(dropInDir)
	err = filepath.WalkDir(root, func(p string, entry fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == root {
				return filepath.SkipDir
			}
			return err
		}
		if entry.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.Join(dropInDir, rel))
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", dropInDir, err)
	}
	if !slices.Contains(paths, dropIn) {
		at := 1
		for at < len(paths) && paths[at] < dropIn {
			at++
		}
		paths = slices.Insert(paths, at, dropIn)
	}
	eff = &effectiveConfig{
		engine: "CRI-O",
		wholeTable: func(key []string) int {
			if len(key) > 4 && slices.Equal(key[:3], []string{"crio", "runtime", "runtimes"}) {
				return 4
			}
			return 0
		},
		runtimeBinary:  func(configLayer) []string { return crioRuntime(nvidiaRuntime, "runtime_path") },
		defaultRuntime: func(configLayer) []string { return crioDefaultRuntime },
	}
	for _, p := range paths {
		layer, exists, err := readLayer(h, p)
		if err != nil {
			return nil, 0, err
		}
		if p == dropIn {
			ours = len(eff.layers)
			if exists && layer.old == nil {
				layer.old = []byte{}
			}
			if !exists {
				doc, _ := tomledit.Parse(nil)
				layer = configLayer{path: p, doc: doc}
			}
		} else if !exists {
			continue
		}
		eff.layers = append(eff.layers, layer)
	}
	return eff, ours, nil
}

// crioRuntimeHolder is the last file CRI-O reads after ours (index ours)
// that defines the nvidia runtime: nvidia-ctk's 99-nvidia.toml, usually; ""
// when none does.
func crioRuntimeHolder(eff *effectiveConfig, ours int) string {
	for i := len(eff.layers) - 1; i > ours; i-- {
		if eff.layers[i].doc.Has(crioRuntime(nvidiaRuntime)...) {
			return eff.layers[i].path
		}
	}
	return ""
}

// editCRIODropIn makes our drop-in define the nvidia runtime (unless
// defineRuntime is false: a later file defines it), the default runtime
// and the CDI spec directories, over the settings of the files read before
// it (before) and under those of the files read after it (after).
func editCRIODropIn(doc *tomledit.Doc, before, after []*tomledit.Doc, want runtimeWant, defineRuntime bool) ([]string, error) {
	// get reads a setting as CRI-O ends up with it from the files up to
	// ours; getAll from all of them.
	get := func(path []string) (any, bool) {
		if v, ok := doc.Get(path...); ok {
			return v, true
		}
		for i := len(before) - 1; i >= 0; i-- {
			if v, ok := before[i].Get(path...); ok {
				return v, true
			}
		}
		return nil, false
	}
	getAll := func(path []string) (any, bool) {
		for i := len(after) - 1; i >= 0; i-- {
			if v, ok := after[i].Get(path...); ok {
				return v, true
			}
		}
		return get(path)
	}
	var did []string
	if defineRuntime {
		var err error
		if did, err = defineCRIORuntime(doc, before, want, get); err != nil {
			return nil, err
		}
	}

	if want.setDefault {
		if v, _ := getAll(crioDefaultRuntime); v != nvidiaRuntime {
			if _, err := doc.Set(crioDefaultRuntime, nvidiaRuntime); err != nil {
				return nil, err
			}
			did = append(did, "make nvidia the default runtime")
		}
	} else if v, _ := doc.Get(crioDefaultRuntime...); v == nvidiaRuntime {
		if _, err := doc.Delete(crioDefaultRuntime); err != nil {
			return nil, err
		}
		did = append(did, "stop making nvidia the default runtime")
	}

	if want.cdiSpecDir != "" {
		path := []string{"crio", "runtime", "cdi_spec_dirs"}
		v, set := getAll(path)
		dirs, _ := stringList(v)
		if next := withSpecDir(dirs, set, want.cdiSpecDir); next != nil {
			if _, err := doc.Set(path, next); err != nil {
				return nil, err
			}
			did = append(did, "scan "+want.cdiSpecDir+" for CDI specs")
		}
	}
	return did, nil
}

// defineCRIORuntime makes doc define the nvidia runtime: a new table starts
// from the settings of the runtime nvidia wraps in the files before it
// (sources), as nvidia-ctk does; then runtime_path and runtime_type.
func defineCRIORuntime(doc *tomledit.Doc, sources []*tomledit.Doc, want runtimeWant, get func([]string) (any, bool)) ([]string, error) {
	var did []string
	if !doc.Has(crioRuntime(nvidiaRuntime)...) {
		def, _ := get(crioDefaultRuntime)
		defName, _ := def.(string)
		from := ""
	copyFrom:
		for _, name := range lowLevelRuntimes(defName) {
			for i := len(sources) - 1; i >= 0; i-- {
				leaves := sources[i].Leaves(crioRuntime(name)...)
				if len(leaves) == 0 {
					continue
				}
				for _, leaf := range leaves {
					raw := leaf.Raw
					switch strings.Join(leaf.Path, ".") {
					case "runtime_path":
						raw = tomledit.Quote(want.binary)
					case "runtime_type":
						raw = tomledit.Quote("oci")
					}
					if _, err := doc.SetRaw(crioRuntime(nvidiaRuntime, leaf.Path...), raw); err != nil {
						return nil, err
					}
				}
				from = name
				break copyFrom
			}
		}
		if from != "" {
			did = append(did, fmt.Sprintf("add the nvidia runtime (%s, with the settings of runtime %q)", want.binary, from))
		} else {
			did = append(did, fmt.Sprintf("add the nvidia runtime (%s)", want.binary))
		}
	}
	changed, err := doc.Set(crioRuntime(nvidiaRuntime, "runtime_path"), want.binary)
	if err != nil {
		return nil, err
	}
	if changed && len(did) == 0 {
		did = append(did, "point the nvidia runtime at "+want.binary)
	}
	if changed, err := doc.Set(crioRuntime(nvidiaRuntime, "runtime_type"), "oci"); err != nil {
		return nil, err
	} else if changed && len(did) == 0 {
		did = append(did, "make the nvidia runtime an oci runtime")
	}
	return did, nil
}

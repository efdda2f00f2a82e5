package bootstrap

import (
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
const (
	defaultCRIOConfig = "/etc/crio/crio.conf"
	crioDropInName    = "99-nvidia.conf"
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
	f := configFile{path: dropIn, old: eff.layers[ours].old, exists: eff.layers[ours].old != nil}
	doc := eff.layers[ours].doc
	var before []*tomledit.Doc
	for _, l := range eff.layers[:ours] {
		before = append(before, l.doc)
	}
	did, err := editCRIODropIn(doc, before, want)
	if err != nil {
		return nil, editError(dropIn, err)
	}
	verb := "update"
	if !f.exists {
		verb = "create"
	}
	var changes []Change
	if change, ok := f.change(doc.Bytes(), describeEdits(verb, dropIn, did), "crio"); ok {
		changes = append(changes, change)
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

// editCRIODropIn makes our drop-in define the nvidia runtime, over the
// settings of the files read before it.
func editCRIODropIn(doc *tomledit.Doc, sources []*tomledit.Doc, want runtimeWant) ([]string, error) {
	// get reads a setting as CRI-O ends up with it from the files before
	// ours and ours.
	get := func(path []string) (any, bool) {
		if v, ok := doc.Get(path...); ok {
			return v, true
		}
		for i := len(sources) - 1; i >= 0; i-- {
			if v, ok := sources[i].Get(path...); ok {
				return v, true
			}
		}
		return nil, false
	}
	var did []string
	rt := crioRuntime(nvidiaRuntime)
	if !doc.Has(rt...) {
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

	if want.setDefault {
		if v, _ := get(crioDefaultRuntime); v != nvidiaRuntime {
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
		v, set := get(path)
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

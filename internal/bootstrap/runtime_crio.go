package bootstrap

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	sources, err := crioSources(h, mainPath, dropInDir, dropIn)
	if err != nil {
		return nil, err
	}
	f, err := readConfigFile(h, dropIn)
	if err != nil {
		return nil, err
	}
	doc, err := parseTOMLFile(f)
	if err != nil {
		return nil, err
	}
	did, err := editCRIODropIn(doc, sources, want)
	if err != nil {
		return nil, editError(dropIn, err)
	}
	verb := "update"
	if !f.exists {
		verb = "create"
	}
	change, ok := f.change(doc.Bytes(), describeEdits(verb, dropIn, did), "crio")
	if !ok {
		return nil, nil
	}
	return []Change{change}, nil
}

// crioSources are the config files CRI-O reads before (under) our drop-in,
// in the order it reads them. A file that does not parse is a *ParseError:
// CRI-O would not start with it either.
func crioSources(h *Host, mainPath, dropInDir, dropIn string) ([]*tomledit.Doc, error) {
	paths := []string{mainPath}
	root := h.Path(dropInDir)
	err := filepath.WalkDir(root, func(p string, entry fs.DirEntry, err error) error {
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
		if target := filepath.Join(dropInDir, rel); target != dropIn {
			paths = append(paths, target)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dropInDir, err)
	}
	var docs []*tomledit.Doc
	for _, p := range paths {
		f, err := readConfigFile(h, p)
		if err != nil {
			return nil, err
		}
		if !f.exists {
			continue
		}
		doc, err := parseTOMLFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	return docs, nil
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

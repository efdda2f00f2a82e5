package bootstrap

import (
	"path/filepath"
	"slices"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// containerdEffective is containerd's config as containerd merges it
// (cmd/containerd/server/config LoadConfig): the main file first, then the
// imports of each file loaded, breadth first, each resolved against the
// importing file's directory and globbed (filepath.Glob, so in lexical
// order), every file once. containerd 2.0 and later merge plugin tables key
// by key (containerd/containerd#9982) and migrate a version 1 or 2 file to
// version 3 first, so each file's keys are read in its own version's
// schema; before 2.0 an imported plugin table replaces the whole table
// (containerd/containerd#5837). planned holds the text the plan gives
// files, in place of what is on disk (a drop-in it creates included).
func containerdEffective(h *Host, mainPath string, mergesKeys bool, planned map[string]*tomledit.Doc) (*effectiveConfig, error) {
	eff := &effectiveConfig{
		engine: "containerd",
		wholeTable: func(key []string) int {
			if !mergesKeys && len(key) > 0 && key[0] == "plugins" {
				return 2
			}
			return 0
		},
		runtimeBinary: func(l configLayer) []string {
			return containerdSchemaFor(l.version).runtime(nvidiaRuntime, "options", "BinaryName")
		},
		defaultRuntime: func(l configLayer) []string {
			return containerdSchemaFor(l.version).defaultRuntime()
		},
	}
	loaded := map[string]bool{}
	pending := []string{mainPath}
	for len(pending) > 0 {
		path := pending[0]
		pending = pending[1:]
		if loaded[path] {
			continue
		}
		loaded[path] = true
		layer, exists, err := readLayer(h, path)
		if err != nil {
			return nil, err
		}
		if doc, ok := planned[path]; ok {
			layer.path, layer.doc, exists = path, doc, true
		}
		if !exists {
			continue
		}
		layer.version = 1
		if v, ok := layer.doc.Get("version"); ok {
			if n, isInt := v.(int64); isInt {
				layer.version = n
			}
		}
		eff.layers = append(eff.layers, layer)
		v, _ := layer.doc.Get("imports")
		imports, _ := stringList(v)
		for _, imp := range imports {
			pattern := containerdImportPattern(filepath.Dir(path), imp)
			matches, err := globInRoot(h, pattern)
			if err != nil {
				return nil, err
			}
			for p := range planned {
				if ok, _ := filepath.Match(pattern, p); ok && !slices.Contains(matches, p) {
					matches = append(matches, p)
				}
			}
			slices.Sort(matches)
			pending = append(pending, matches...)
		}
	}
	return eff, nil
}

// criDisabledBy is the file whose disabled_plugins turns off containerd's
// CRI plugin ("" when none does): Docker's containerd.io package ships
// /etc/containerd/config.toml with disabled_plugins = ["cri"], and a
// containerd configured so serves no Kubernetes runtime, so runtimes added
// to the CRI plugin do nothing there. containerd appends every file's list.
func (c *effectiveConfig) criDisabledBy() string {
	for _, l := range c.layers {
		v, _ := l.doc.Get("disabled_plugins")
		list, _ := stringList(v)
		for _, name := range list {
			if name == "cri" || name == "io.containerd.grpc.v1.cri" || name == "io.containerd.cri.v1.runtime" {
				return l.path
			}
		}
	}
	return ""
}

package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// containerd keeps its runtimes in the CRI plugin, whose name depends on the
// config version (containerd 1.7 pkg/cri/config PluginConfig, 2.0
// internal/cri/config RuntimeConfig registered as io.containerd.cri.v1
// "runtime"; nvidia-container-toolkit pkg/config/engine/containerd
// criRuntimePluginName):
//
//	version 1  [plugins.cri.containerd.runtimes.nvidia]
//	version 2  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
//	version 3  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
//
// In each, default_runtime_name sits in the plugin's [containerd] table and
// enable_cdi / cdi_spec_dirs in the plugin's own table (not under
// [containerd]: nvidia-ctk 1.20.1 writes version 1's enable_cdi under
// plugins.cri.containerd, where containerd 1.x does not read it).
const (
	defaultContainerdConfig = "/etc/containerd/config.toml"
	containerdDropInName    = "99-nvidia.toml"
	containerdRuncV2        = "io.containerd.runc.v2"
	containerdLinuxV1       = "io.containerd.runtime.v1.linux"
)

type containerdSchema struct {
	version int64
	plugin  string
}

func containerdSchemaFor(version int64) containerdSchema {
	switch version {
	case 1:
		return containerdSchema{version: 1, plugin: "cri"}
	case 2:
		return containerdSchema{version: 2, plugin: "io.containerd.grpc.v1.cri"}
	default:
		return containerdSchema{version: 3, plugin: "io.containerd.cri.v1.runtime"}
	}
}

// cri is a key path in the CRI plugin's table.
func (s containerdSchema) cri(keys ...string) []string {
	return append([]string{"plugins", s.plugin}, keys...)
}

func (s containerdSchema) runtime(name string, keys ...string) []string {
	return s.cri(append([]string{"containerd", "runtimes", name}, keys...)...)
}

func (s containerdSchema) defaultRuntime() []string {
	return s.cri("containerd", "default_runtime_name")
}

// planContainerd adds the nvidia runtime to containerd's config, or to a
// drop-in it imports (see containerdDropIn), and then plans against the
// config containerd merges from all its files (containerdEffective): a
// default runtime of nvidia that set_as_default: false removes is removed
// from every file that sets it, and a file read later that overrides the
// nvidia runtime, or a CRI plugin turned off, is an error naming the file.
func planContainerd(ctx context.Context, h *Host, want runtimeWant) ([]Change, error) {
	var at containerdPlacement
	changes, err := planContainerdFiles(ctx, h, want, &at)
	if err != nil {
		return nil, err
	}
	planned := map[string]*tomledit.Doc{}
	var written []string
	for _, c := range changes {
		file := c.File()
		doc, err := tomledit.Parse(file.New)
		if err != nil {
			return nil, editError(file.Path, err)
		}
		planned[file.Path] = doc
		written = append(written, file.Path)
	}
	eff, err := containerdEffective(h, at.main, at.mergesKeys, planned)
	if err != nil {
		return nil, err
	}
	if file := eff.criDisabledBy(); file != "" {
		return nil, fieldError("runtime.engine", "%s disables containerd's CRI plugin (disabled_plugins), as Docker's containerd.io package ships it, so runtimes in the CRI plugin do nothing there: set runtime.engine: docker if Docker runs the GPU containers, or remove \"cri\" from disabled_plugins in %s if Kubernetes uses this containerd", file, file)
	}
	if !want.setDefault {
		more, err := eff.unsetNvidiaDefault("containerd", written...)
		if err != nil {
			return nil, err
		}
		changes = append(changes, more...)
	}
	if conflicts := eff.conflicts(want, at.ours); len(conflicts) > 0 {
		return nil, conflictError("containerd", conflicts)
	}
	if at.generated == nil {
		warnUnreadToolkitDropIns(h, at.main, eff)
	}
	if at.generated != nil {
		for i := range changes {
			changes[i].Restart = at.generated.service
			if changes[i].File().Path == at.main {
				changes[i].Summary += at.generated.note()
			}
		}
	}
	return changes, nil
}

// containerdPlacement is where planContainerdFiles put the runtime: the
// main config, the file that holds the nvidia runtime, and whether the
// containerd it plans for merges imported plugin tables key by key (2.0
// and later).
type containerdPlacement struct {
	main, ours string
	mergesKeys bool
	generated  *containerdGenerated // the main config is generated from a template (k3s); nil when not
}

// planContainerdFiles edits the main config or our drop-in (see
// planContainerd).
func planContainerdFiles(ctx context.Context, h *Host, want runtimeWant, at *containerdPlacement) ([]Change, error) {
	path := configPathOr(want.configPath, defaultContainerdConfig)
	main, err := readConfigFile(h, path)
	if err != nil {
		return nil, err
	}
	seed := main.old
	if tmpl, text, gen, ok, err := containerdTemplate(h, main); err != nil {
		return nil, err
	} else if ok {
		main, seed, path, at.generated = tmpl, text, tmpl.path, &gen
	}
	at.main, at.ours = path, path
	mainDoc, err := parseTOMLFile(configFile{path: path, old: seed, exists: main.exists})
	if err != nil {
		return nil, err
	}
	ver, known := probeVersion(ctx, h, engineContainerd)
	warnContainerdBOM(h, path, seed, ver, known) // runtime_containerd_bom.go
	version, why, err := containerdConfigVersion(path, mainDoc, ver, known)
	if err != nil {
		return nil, err
	}
	if known && !ver.atLeast(2, 0) && version >= 3 {
		return nil, fmt.Errorf("%s is containerd config version 3, which containerd %s cannot read (version 3 needs containerd 2.0 or later)", path, ver)
	}
	if want.enableCDI && known && !ver.atLeast(1, 7) {
		return nil, fieldError("runtime.enable_cdi", "containerd %s has no CDI support (it came in containerd 1.7); upgrade containerd or set enable_cdi: false", ver)
	}
	ed := containerdEdit{
		schema:      containerdSchemaFor(version),
		want:        want,
		runtimeType: containerdRuncV2,
		// CDI is on unless turned off from containerd 2.0 (internal/cri/config
		// DefaultRuntimeConfig: EnableCDI true); off by default in 1.7.
		cdiOnByDefault: version >= 3 || known && ver.atLeast(2, 0),
	}
	if known && !ver.atLeast(1, 3) {
		// The runc v2 shim came with containerd 1.3; before it the default
		// was the v1 Linux runtime, which reads options.Runtime.
		ed.runtimeType = containerdLinuxV1
	}
	about := fmt.Sprintf(" (containerd config version %d: %s)", version, why)

	at.mergesKeys = known && ver.atLeast(2, 0) || !known && version >= 3
	if at.generated == nil {
		holder, err := containerdRuntimeHolder(h, path, mainDoc, at.mergesKeys)
		if err != nil {
			return nil, err
		}
		// A holder that points the runtime at another binary (the GPU
		// operator's) is not taken over: the plan's conflicts name it.
		if holder != nil && holderBinaryIs(*holder, want.binary) {
			return planContainerdHolder(h, ed, *holder, mainDoc, at, about)
		}
	}
	dropIn, importPattern, inPlaceWhy := containerdDropIn(path, mainDoc, ver, known, version)
	if dropIn == "" {
		verb := "update"
		if !main.exists {
			verb = "create"
		}
		if mainDoc.IsEmpty() {
			if _, err := mainDoc.Set([]string{"version"}, version); err != nil {
				return nil, err
			}
		}
		did, err := ed.apply(mainDoc, nil)
		if err != nil {
			return nil, editError(path, err)
		}
		change, ok := main.change(mainDoc.Bytes(), describeEdits(verb, path, did)+about+inPlaceWhy, "containerd")
		if !ok {
			return nil, nil
		}
		return []Change{change}, nil
	}

	at.ours = dropIn
	in, err := readConfigFile(h, dropIn)
	if err != nil {
		return nil, err
	}
	inDoc, err := parseTOMLFile(in)
	if err != nil {
		return nil, err
	}
	verb := "update"
	if !in.exists {
		verb = "create"
	}
	if inDoc.IsEmpty() {
		// The main config alone may have it all already (configured in
		// place before it imported drop-ins): then no drop-in is needed.
		scratch, _ := tomledit.Parse(mainDoc.Bytes())
		if did, err := ed.apply(scratch, nil); err == nil && len(did) == 0 {
			return nil, nil
		}
		if _, err := inDoc.Set([]string{"version"}, version); err != nil {
			return nil, err
		}
	}
	did, err := ed.apply(inDoc, mainDoc)
	if err != nil {
		return nil, editError(dropIn, err)
	}
	var changes []Change
	if !in.exists && len(did) == 0 {
		// The main config has the runtime; what is left to do is there.
		importPattern = ""
	} else if change, ok := in.change(inDoc.Bytes(), describeEdits(verb, dropIn, did)+about, "containerd"); ok {
		changes = append(changes, change)
	}
	var mainDid []string
	if importPattern != "" {
		if changed, err := mainDoc.AppendString([]string{"imports"}, importPattern); err != nil {
			return nil, editError(path, err)
		} else if changed {
			mainDid = append(mainDid, "import "+importPattern)
		}
	}
	if !want.setDefault {
		if def, _ := mainDoc.Get(ed.schema.defaultRuntime()...); def == nvidiaRuntime {
			if _, err := mainDoc.Delete(ed.schema.defaultRuntime()); err != nil {
				return nil, editError(path, err)
			}
			mainDid = append(mainDid, "stop making nvidia the default runtime")
		}
	}
	if change, ok := main.change(mainDoc.Bytes(), describeEdits("update", path, mainDid), "containerd"); ok {
		changes = append(changes, change)
	}
	return changes, nil
}

// containerdRuntimeHolder is the file containerd imports that holds the
// nvidia runtime, when one does: nvidia-ctk 1.18+'s drop-in (see
// containerdDropIn), or ours from an earlier run. It is the last imported
// file, in containerd's merge order, that defines the nvidia runtime;
// before containerd 2.0, where an imported file's CRI table replaces the
// main file's whole, a file that defines the nvidia runtime decides the
// whole CRI config only when no later file has a CRI table (the plan's
// conflicts name that file otherwise). nil when no imported file defines
// it.
func containerdRuntimeHolder(h *Host, path string, mainDoc *tomledit.Doc, mergesKeys bool) (*configLayer, error) {
	if v, _ := mainDoc.Get("imports"); v == nil {
		return nil, nil
	}
	eff, err := containerdEffective(h, path, mergesKeys, map[string]*tomledit.Doc{path: mainDoc})
	if err != nil {
		return nil, err
	}
	for i := len(eff.layers) - 1; i >= 1; i-- {
		l := eff.layers[i]
		if l.doc.Has(containerdSchemaFor(l.version).runtime(nvidiaRuntime)...) {
			return &l, nil
		}
	}
	return nil, nil
}

// containerdToolkitDropIns are where nvidia-ctk writes containerd's
// drop-in, relative to the main config's directory: conf.d from v1.18.1,
// config.d in v1.18.0.
var containerdToolkitDropIns = []string{"conf.d/99-nvidia.toml", "config.d/99-nvidia.toml"}

// warnUnreadToolkitDropIns warns about an nvidia-ctk drop-in beside the
// main config that containerd does not import: its nvidia runtime does
// nothing (a version 1 config, or an imports line removed since).
func warnUnreadToolkitDropIns(h *Host, main string, eff *effectiveConfig) {
	for _, rel := range containerdToolkitDropIns {
		p := filepath.Join(filepath.Dir(main), rel)
		if h.Exists(p) && !slices.Contains(eff.paths(), p) {
			h.Warn("%s (where nvidia-ctk 1.18+ writes containerd's nvidia runtime) is not imported by %s, so containerd does not read it; the nvidia runtime is configured in the files containerd reads (%s): remove it to avoid confusion", p, main, strings.Join(eff.paths(), ", "))
		}
	}
}

// holderBinaryIs reports whether the holder's nvidia runtime runs binary,
// or names no binary.
func holderBinaryIs(l configLayer, binary string) bool {
	v, ok := l.doc.Get(containerdSchemaFor(l.version).runtime(nvidiaRuntime, "options", "BinaryName")...)
	return !ok || v == binary
}

// planContainerdHolder edits the imported file that holds the nvidia
// runtime (containerdRuntimeHolder) in place of adding a second nvidia
// runtime to the main config or to another drop-in. The file is edited in
// its own config version; settings it lacks are read from the main config
// when containerd merges key by key (2.0 and later), and not before, where
// its CRI table is all containerd sees.
func planContainerdHolder(h *Host, ed containerdEdit, holder configLayer, mainDoc *tomledit.Doc, at *containerdPlacement, about string) ([]Change, error) {
	at.ours = holder.path
	h.Note("the nvidia runtime is in %s, which containerd imports from %s (nvidia-ctk 1.18+ `runtime configure` writes its drop-in there, with the whole CRI section before containerd 2.0), so it is configured there, not defined a second time", holder.path, at.main)
	ed.schema = containerdSchemaFor(holder.version)
	below := mainDoc
	if !at.mergesKeys {
		below = nil
	}
	doc, err := tomledit.Parse(holder.old)
	if err != nil {
		return nil, editError(holder.path, err)
	}
	did, err := ed.apply(doc, below)
	if err != nil {
		return nil, editError(holder.path, err)
	}
	f := configFile{path: holder.path, old: holder.old, exists: true}
	change, ok := f.change(doc.Bytes(), describeEdits("update", holder.path, did)+about, "containerd")
	if !ok {
		return nil, nil
	}
	return []Change{change}, nil
}

// containerdConfigVersion is the config version to edit in, and why: the
// file's version key (containerd reads a file without one as version 1);
// for a new file the version the installed containerd writes (`containerd
// config default`: 3 from 2.0, 2 from 1.3); 2 when containerd does not say.
func containerdConfigVersion(path string, doc *tomledit.Doc, ver engineVersion, known bool) (int64, string, error) {
	if !doc.IsEmpty() {
		v, ok := doc.Get("version")
		if !ok {
			return 1, "the file has no version key, which containerd reads as version 1", nil
		}
		n, isInt := v.(int64)
		if !isInt || n < 1 || n > 3 {
			return 0, "", containerdVersionError(path, doc, v)
		}
		if known && ver.atLeast(2, 0) && strings.HasPrefix(string(doc.Bytes()), "\uFEFF") {
			return 0, "", &ParseError{Path: path, Line: 1, Column: 1, Err: fmt.Errorf("the file starts with a UTF-8 byte order mark, which containerd %s's TOML reader (go-toml v2) refuses, so containerd cannot load this file: remove the mark (the first 3 bytes, EF BB BF)", ver)}
		}
		return n, "the file's version key", nil
	}
	switch {
	case !known:
		return 2, "a new file; `containerd --version` gave no version, and containerd 1.3 to 2.x read version 2", nil
	case ver.atLeast(2, 0):
		return 3, "a new file for containerd " + ver.String(), nil
	case ver.atLeast(1, 3):
		return 2, "a new file for containerd " + ver.String(), nil
	}
	return 1, "a new file for containerd " + ver.String(), nil
}

// containerdVersionError says where a version key containerd cannot read
// is, and what to write instead: containerd decodes version into an int, so
// version = "2" (text) stops it loading the file at all.
func containerdVersionError(path string, doc *tomledit.Doc, v any) error {
	line, column, _ := doc.Position("version")
	problem := fmt.Sprintf("version = %v is not a containerd config version (1, 2 or 3); write version = 2 for containerd 1.x, 3 for 2.x", v)
	if s, isText := v.(string); isText {
		problem = fmt.Sprintf("version = %q is text; containerd reads the version as a number (1, 2 or 3) and cannot load this file", s)
		if s == "1" || s == "2" || s == "3" {
			problem += ": write version = " + s + ", without quotes"
		}
	}
	return &ParseError{Path: path, Line: line, Column: column, Err: errors.New(problem)}
}

// containerdDropIn decides where the runtime goes when the main config
// imports drop-ins, and returns the drop-in path and the import to add to the
// main config ("" when an import already covers it).
//
// containerd merges an imported file into the main config in
// cmd/containerd/server/config mergeConfig. Before 2.0 it replaced every
// plugin section the import names as a whole ("Maps merged by keys, but
// values are replaced entirely"; containerd/containerd#5837): a drop-in with
// only the nvidia runtime would wipe sandbox_image, the runc options and
// everything else of the main file's CRI section. Since 2.0
// (containerd/containerd#9982) plugin sections are merged key by key, so a
// drop-in that holds just the nvidia keys is right. nvidia-ctk 1.18+
// instead copies the whole CRI section into its drop-in, for every
// containerd (NVIDIA/nvidia-container-toolkit v1.20.1
// pkg/config/engine/containerd getBaseDropInConfigTree), which then shadows
// later edits of the main file before 2.0; this bootstrap edits the main
// file in place instead. So: a drop-in only when the main config has
// imports and containerd is 2.x (or, when `containerd --version` says
// nothing, the config is version 3, which only 2.x reads).
//
// Where nvidia-ctk ran already, containerdRuntimeHolder finds its drop-in
// first and the runtime is configured there. What nvidia-ctk writes
// (cmd/nvidia-ctk/runtime/configure defaultContainerdDropInConfigFilePath;
// pkg/config/engine/containerd ConfigWithDropIn.Save, ensureImports):
// /etc/containerd/conf.d/99-nvidia.toml from v1.18.1
// (/etc/containerd/config.d/99-nvidia.toml in v1.18.0), holding version,
// the CRI plugin's whole table copied from config.toml and the nvidia
// runtime with runc's settings (default_runtime_name with
// --set-as-default, enable_cdi with --cdi.enabled); and in config.toml the
// import "<that directory>/*.toml" appended to imports (version set too
// when the file was empty). testdata/runtime/oracle reproduces this
// output. A version 1 config has no ConfigWithDropIn there
// (containerd.New returns ConfigV1): nvidia-ctk writes the whole file, runtime
// added, to the drop-in path and imports nothing, so containerd never reads
// it; the plan warns about such an unread drop-in
// (warnUnreadToolkitDropIns).
func containerdDropIn(path string, doc *tomledit.Doc, ver engineVersion, known bool, version int64) (dropIn, importPattern, inPlaceWhy string) {
	v, _ := doc.Get("imports")
	imports, _ := stringList(v)
	if len(imports) == 0 {
		return "", "", ""
	}
	if known && !ver.atLeast(2, 0) || !known && version < 3 {
		return "", "", "; in the main file although it has imports: containerd before 2.0 replaces whole plugin sections from imported files (containerd/containerd#5837)"
	}
	dir := filepath.Dir(path)
	for _, imp := range imports {
		pattern := containerdImportPattern(dir, imp)
		if !strings.Contains(pattern, "*") || strings.ContainsAny(filepath.Dir(pattern), "*?[") {
			continue
		}
		candidate := filepath.Join(filepath.Dir(pattern), containerdDropInName)
		if ok, _ := filepath.Match(pattern, candidate); ok {
			return candidate, "", ""
		}
	}
	confD := filepath.Join(dir, "conf.d")
	return filepath.Join(confD, containerdDropInName), filepath.Join(confD, "*.toml"), ""
}

// containerdImportPattern resolves an entry of `imports` as containerd does:
// relative to the main config's directory.
func containerdImportPattern(dir, imp string) string {
	if !filepath.IsAbs(imp) {
		imp = filepath.Join(dir, imp)
	}
	return filepath.Clean(imp)
}

// containerdConfigFiles are the files containerd reads its config from,
// in the order it merges them (containerdEffective); just the main file
// when that cannot be read.
func containerdConfigFiles(h *Host, configPath string) []string {
	path := configPathOr(configPath, defaultContainerdConfig)
	eff, err := containerdEffective(h, path, true, nil)
	if err != nil || len(eff.layers) == 0 {
		return []string{path}
	}
	return eff.paths()
}

// containerdEdit makes one config document (the main config, or a drop-in
// over it) define the nvidia runtime.
type containerdEdit struct {
	schema         containerdSchema
	want           runtimeWant
	runtimeType    string // for a runtime that copies none
	cdiOnByDefault bool
}

// apply edits doc, reading settings doc does not have from below (the main
// config under a drop-in). It returns what it changed, nothing when doc
// (over below) already has it all.
func (e containerdEdit) apply(doc, below *tomledit.Doc) ([]string, error) {
	get := func(path []string) (any, bool) {
		if v, ok := doc.Get(path...); ok {
			return v, true
		}
		if below != nil {
			return below.Get(path...)
		}
		return nil, false
	}
	ensure := func(path []string, value any) (bool, error) {
		if v, ok := get(path); ok && v == value {
			return false, nil
		}
		return doc.Set(path, value)
	}
	var did []string
	rt := e.schema.runtime(nvidiaRuntime)
	if _, ok := get(rt); !ok {
		from, err := e.copyLowLevelRuntime(doc, below, get)
		if err != nil {
			return nil, err
		}
		if from != "" {
			did = append(did, fmt.Sprintf("add the nvidia runtime (%s, with the settings of runtime %q)", e.want.binary, from))
		} else {
			did = append(did, fmt.Sprintf("add the nvidia runtime (%s)", e.want.binary))
		}
	}
	if t, _ := get(append(rt, "runtime_type")); t == nil || t == "" {
		if _, err := doc.Set(append(rt, "runtime_type"), e.runtimeType); err != nil {
			return nil, err
		}
	}
	changed, err := ensure(append(rt, "options", "BinaryName"), e.want.binary)
	if err != nil {
		return nil, err
	}
	if e.schema.version == 1 {
		// io.containerd.runtime.v1.linux, still common with version 1
		// configs, reads the binary from options.Runtime (as nvidia-ctk sets).
		c, err := ensure(append(rt, "options", "Runtime"), e.want.binary)
		if err != nil {
			return nil, err
		}
		changed = changed || c
	}
	if changed && len(did) == 0 {
		did = append(did, "point the nvidia runtime at "+e.want.binary)
	}
	if from, v, ok := e.wrappedCgroupDriver(doc, below, get); ok {
		if cur, _ := get(append(rt, "options", "SystemdCgroup")); cur != v {
			if _, err := doc.Set(append(rt, "options", "SystemdCgroup"), v); err != nil {
				return nil, err
			}
			did = append(did, fmt.Sprintf("set the nvidia runtime's SystemdCgroup = %v, as runtime %q it wraps has", v, from))
		}
	}

	def := e.schema.defaultRuntime()
	if e.want.setDefault {
		if c, err := ensure(def, nvidiaRuntime); err != nil {
			return nil, err
		} else if c {
			did = append(did, "make nvidia the default runtime")
		}
	} else if v, _ := doc.Get(def...); v == nvidiaRuntime {
		if _, err := doc.Delete(def); err != nil {
			return nil, err
		}
		did = append(did, "stop making nvidia the default runtime")
	}

	if e.want.enableCDI {
		on := e.cdiOnByDefault
		if v, ok := get(e.schema.cri("enable_cdi")); ok {
			on = v == true
		}
		if !on {
			if _, err := doc.Set(e.schema.cri("enable_cdi"), true); err != nil {
				return nil, err
			}
			did = append(did, "enable CDI")
		}
	}
	if e.want.cdiSpecDir != "" {
		v, set := get(e.schema.cri("cdi_spec_dirs"))
		dirs, _ := stringList(v)
		if next := withSpecDir(dirs, set, e.want.cdiSpecDir); next != nil {
			if _, err := doc.Set(e.schema.cri("cdi_spec_dirs"), next); err != nil {
				return nil, err
			}
			did = append(did, "scan "+e.want.cdiSpecDir+" for CDI specs")
		}
	}
	return did, nil
}

// copyLowLevelRuntime gives a new nvidia runtime the settings of the runtime
// it wraps — the default runtime unless that is an nvidia one, else runc,
// else crun, as nvidia-ctk does (engine.GetLowLevelRuntimes) — so that
// SystemdCgroup and friends match runc's and the kubelet's cgroup driver.
// The binary is replaced by the nvidia runtime's. It returns the runtime
// copied, "" when there is none.
func (e containerdEdit) copyLowLevelRuntime(doc, below *tomledit.Doc, get func([]string) (any, bool)) (string, error) {
	def, _ := get(e.schema.defaultRuntime())
	defName, _ := def.(string)
	for _, name := range lowLevelRuntimes(defName) {
		leaves := doc.Leaves(e.schema.runtime(name)...)
		if len(leaves) == 0 && below != nil {
			leaves = below.Leaves(e.schema.runtime(name)...)
		}
		if len(leaves) == 0 {
			continue
		}
		for _, leaf := range leaves {
			raw := leaf.Raw
			switch strings.Join(leaf.Path, ".") {
			case "options.BinaryName", "options.Runtime":
				raw = tomledit.Quote(e.want.binary)
			}
			if _, err := doc.SetRaw(e.schema.runtime(nvidiaRuntime, leaf.Path...), raw); err != nil {
				return "", err
			}
		}
		return name, nil
	}
	return "", nil
}

// wrappedCgroupDriver is the SystemdCgroup setting of the runtime the
// nvidia runtime wraps (see copyLowLevelRuntime), when that runtime sets
// it. A runtime added or copied once keeps it, but an nvidia runtime found
// already there may lack it (k3s's generated config, nvidia-ctk before
// 1.14): with SystemdCgroup = true on runc and not on nvidia, GPU pods run
// under the cgroupfs driver while the kubelet uses systemd's, which the
// kubelet documents as unsupported (kubernetes.io "Configuring a cgroup
// driver"), so the nvidia runtime follows the runtime it wraps.
func (e containerdEdit) wrappedCgroupDriver(doc, below *tomledit.Doc, get func([]string) (any, bool)) (from string, value any, ok bool) {
	def, _ := get(e.schema.defaultRuntime())
	defName, _ := def.(string)
	for _, name := range lowLevelRuntimes(defName) {
		if !doc.Has(e.schema.runtime(name)...) && (below == nil || !below.Has(e.schema.runtime(name)...)) {
			continue
		}
		v, ok := get(e.schema.runtime(name, "options", "SystemdCgroup"))
		return name, v, ok
	}
	return "", nil, false
}

// lowLevelRuntimes are the runtimes whose settings an nvidia runtime
// copies, in order of preference.
func lowLevelRuntimes(defaultRuntime string) []string {
	if defaultRuntime != "" && !strings.HasPrefix(defaultRuntime, "nvidia") && defaultRuntime != "runc" && defaultRuntime != "crun" {
		return []string{defaultRuntime, "runc", "crun"}
	}
	if defaultRuntime == "crun" {
		return []string{"crun", "runc"}
	}
	return []string{"runc", "crun"}
}

// parseTOMLFile parses a config file; text that is not TOML is a
// *ParseError naming the file, line and column.
func parseTOMLFile(f configFile) (*tomledit.Doc, error) {
	doc, err := tomledit.Parse(f.old)
	var serr *tomledit.SyntaxError
	if errors.As(err, &serr) {
		return nil, &ParseError{Path: f.path, Line: serr.Line, Column: serr.Column, Err: errors.New(serr.Msg)}
	}
	return doc, err
}

// editError names the file an edit could not be made in; a file whose shape
// is in the way (a value where a table must go) is a *ParseError, left as
// it is.
func editError(path string, err error) error {
	var eerr *tomledit.EditError
	if errors.As(err, &eerr) {
		return &ParseError{Path: path, Line: eerr.Line, Column: eerr.Column, Err: errors.New(eerr.Msg)}
	}
	return fmt.Errorf("%s: %w", path, err)
}

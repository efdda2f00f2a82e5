// Command oracle writes, for each case under testdata/runtime, what
// nvidia-ctk 1.20.1 (github.com/NVIDIA/nvidia-container-toolkit
// pkg/config/engine) makes of the case's input: nvidia-ctk.toml for
// containerd and CRI-O, nvidia-ctk.json for Docker. TestRuntimeMatchesNvidiaCtk
// compares the nvidia runtime settings in those files with what the runtime
// step writes.
//
// A case with nvidia_ctk_drop_in in its case.json instead gets its input/
// made from its node/: the node after nvidia-ctk 1.20.1 `runtime configure`
// ran in its default drop-in mode (see nvidiaCtkDropIn);
// TestRuntimeAlongsideNvidiaCtkDropIn applies the runtime step on it.
//
// It is a module of its own so that the toolkit (which pulls in go-nvml
// 0.13.4, runc, grpc and newer golang.org/x modules) stays out of the
// provider's go.mod. Regenerate after changing a case:
//
//	cd internal/bootstrap/testdata/runtime/oracle && go run . ..
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	ctkconfig "github.com/NVIDIA/nvidia-container-toolkit/api/config/v1"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/containerd"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/crio"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/docker"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/toml"
)

type testCase struct {
	Runtime struct {
		Engine       string `json:"engine"`
		SetAsDefault bool   `json:"set_as_default"`
		EnableCDI    bool   `json:"enable_cdi"`
		RuntimePath  string `json:"runtime_path"`
	} `json:"runtime"`
	ContainerdVersion string `json:"containerd_version"`
	Changes           int    `json:"changes"`
	// NvidiaCtkDropIn, when set, makes the case's input/ from its node/:
	// node/ as it is, plus what `nvidia-ctk runtime configure
	// --runtime=<engine>` (drop-in mode, the default since 1.18) writes
	// into it with these flags.
	NvidiaCtkDropIn *struct {
		SetAsDefault bool   `json:"set_as_default"`
		EnableCDI    bool   `json:"enable_cdi"`
		RuntimePath  string `json:"runtime_path"`
	} `json:"nvidia_ctk_drop_in"`
}

// quiet is a logger.Interface that drops nvidia-ctk's messages.
type quiet struct{}

func (quiet) Debugf(string, ...interface{})   {}
func (quiet) Errorf(string, ...interface{})   {}
func (quiet) Infof(string, ...interface{})    {}
func (quiet) Warningf(string, ...interface{}) {}
func (quiet) Tracef(string, ...interface{})   {}

func main() {
	root := ".."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	toolkitDefaultConfig(filepath.Join(root, "toolkit-config", "config.toml"))
	dirs, err := filepath.Glob(filepath.Join(root, "*", "case.json"))
	check(err)
	for _, path := range dirs {
		dir := filepath.Dir(path)
		var c testCase
		data, err := os.ReadFile(path)
		check(err)
		check(json.Unmarshal(data, &c))
		if c.NvidiaCtkDropIn != nil {
			nvidiaCtkDropIn(dir, c)
			continue
		}
		if c.Changes == 0 {
			continue // nothing to compare: the input is already configured
		}
		binary := c.Runtime.RuntimePath
		if binary == "" {
			binary = "/usr/bin/nvidia-container-runtime"
		}
		var cfg engine.Interface
		var out string
		switch c.Runtime.Engine {
		case "containerd":
			cfg = containerdConfig(dir, c)
			out = "nvidia-ctk.toml"
		case "crio":
			source := read(filepath.Join(dir, "input/etc/crio/crio.conf"))
			if source == "" {
				source = read(filepath.Join(dir, "input/etc/crio/crio.conf.d/10-crio.conf"))
			}
			cfg, err = crio.New(crio.WithLogger(quiet{}), crio.WithConfigSource(toml.FromString(source)))
			check(err)
			out = "nvidia-ctk.toml"
		case "docker":
			cfg, err = docker.New(docker.WithLogger(quiet{}), docker.WithPath(filepath.Join(dir, "input/etc/docker/daemon.json")))
			check(err)
			out = "nvidia-ctk.json"
		default:
			continue
		}
		check(cfg.AddRuntime("nvidia", binary, c.Runtime.SetAsDefault))
		if c.Runtime.EnableCDI {
			cfg.EnableCDI()
		}
		target := filepath.Join(dir, out)
		check(os.WriteFile(target, []byte(cfg.String()+"\n"), 0o644))
		fmt.Println("wrote", target)
	}
}

// nvidiaCtkDropIn writes the case's input/: a copy of node/ on which
// nvidia-ctk 1.20.1's `runtime configure` has run in its default drop-in
// mode. It makes the same calls as cmd/nvidia-ctk/runtime/configure
// configureConfigFile with --config-source=file: New with the main config
// as source and top-level config, AddRuntime, EnableCDI with --cdi.enabled
// (containerd only: validateFlags ignores it for CRI-O), then Save to the
// engine's drop-in (defaultContainerdDropInConfigFilePath
// /etc/containerd/conf.d/99-nvidia.toml, defaultCrioDropInConfigFilePath
// /etc/crio/crio.conf.d/99-nvidia.toml), which for containerd also adds the
// import to the main config (ConfigWithDropIn.Save, ensureImports). The
// case's files live under its directory rather than at /, so the containerd
// drop-in directory is mapped to its path on the node, as nvidia-ctk's
// installer maps a container's paths to the host's
// (WithContainerPathAsHostPath).
func nvidiaCtkDropIn(dir string, c testCase) {
	node, input := filepath.Join(dir, "node"), filepath.Join(dir, "input")
	check(os.RemoveAll(input))
	check(os.CopyFS(input, os.DirFS(node)))
	flags := c.NvidiaCtkDropIn
	binary := flags.RuntimePath
	if binary == "" {
		binary = "/usr/bin/nvidia-container-runtime"
	}
	var cfg engine.Interface
	var err error
	var dropIn string
	switch c.Runtime.Engine {
	case "containerd":
		main := filepath.Join(input, "etc/containerd/config.toml")
		dropIn = filepath.Join(input, "etc/containerd/conf.d/99-nvidia.toml")
		cfg, err = containerd.New(
			containerd.WithLogger(quiet{}),
			containerd.WithTopLevelConfigPath(main),
			containerd.WithConfigSource(toml.FromFile(main)),
			containerd.WithContainerPathAsHostPath(filepath.Dir(dropIn), "/etc/containerd/conf.d"),
		)
	case "crio":
		main := filepath.Join(input, "etc/crio/crio.conf")
		dropIn = filepath.Join(input, "etc/crio/crio.conf.d/99-nvidia.toml")
		cfg, err = crio.New(
			crio.WithLogger(quiet{}),
			crio.WithTopLevelConfigPath(main),
			crio.WithConfigSource(toml.FromFile(main)),
		)
	default:
		check(fmt.Errorf("%s: nvidia_ctk_drop_in is for containerd and crio", dir))
	}
	check(err)
	check(cfg.AddRuntime("nvidia", binary, flags.SetAsDefault))
	if flags.EnableCDI && c.Runtime.Engine == "containerd" {
		cfg.EnableCDI()
	}
	_, err = cfg.Save(dropIn)
	check(err)
	fmt.Println("wrote", input)
}

// toolkitDefaultConfig writes what `nvidia-ctk config default` (the
// packages' postinst, `nvidia-ctk config --in-place` on a missing file)
// puts in /etc/nvidia-container-runtime/config.toml: api/config/v1 New,
// Save. The cdi step reads its [nvidia-container-runtime] mode.
func toolkitDefaultConfig(path string) {
	cfg, err := ctkconfig.New()
	check(err)
	check(os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	check(err)
	_, err = cfg.Save(f)
	check(err)
	check(f.Close())
	fmt.Println("wrote", path)
}

var containerdVersion = regexp.MustCompile(`\sv?(\d+)\.(\d+)`)

// containerdConfig loads the case's containerd config as nvidia-ctk does; a
// new file gets the version the runtime step picks for that containerd, so
// that the two compare like for like.
func containerdConfig(dir string, c testCase) engine.Interface {
	source := read(filepath.Join(dir, "input/etc/containerd/config.toml"))
	opts := []containerd.Option{
		containerd.WithLogger(quiet{}),
		containerd.WithConfigSource(toml.FromString(source)),
		containerd.WithTopLevelConfigPath(filepath.Join(os.TempDir(), "oracle-absent", "config.toml")),
	}
	if m := containerdVersion.FindStringSubmatch(c.ContainerdVersion); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		switch {
		case major >= 2:
			opts = append(opts, containerd.WithConfigVersion(3))
		case minor < 3:
			opts = append(opts, containerd.WithConfigVersion(1), containerd.WithRuntimeType("io.containerd.runtime.v1.linux"))
		}
	}
	cfg, err := containerd.New(opts...)
	check(err)
	return cfg
}

func read(path string) string {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	check(err)
	return string(data)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Command oracle writes, for each case under testdata/runtime, what
// nvidia-ctk 1.20.1 (github.com/NVIDIA/nvidia-container-toolkit
// pkg/config/engine) makes of the case's input: nvidia-ctk.toml for
// containerd and CRI-O, nvidia-ctk.json for Docker. TestRuntimeMatchesNvidiaCtk
// compares the nvidia runtime settings in those files with what the runtime
// step writes.
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
	dirs, err := filepath.Glob(filepath.Join(root, "*", "case.json"))
	check(err)
	for _, path := range dirs {
		dir := filepath.Dir(path)
		var c testCase
		data, err := os.ReadFile(path)
		check(err)
		check(json.Unmarshal(data, &c))
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

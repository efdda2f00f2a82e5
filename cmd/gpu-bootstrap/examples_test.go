package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
)

// TestExampleConfigsAreValid parses and validates every gpu-bootstrap config
// the examples ship: the gpu-bootstrap.yaml files next to the Packer
// templates, the configs written by the user-data scripts (heredocs
// delimited by CONFIG), the cloud-init write_files entries under
// /etc/gpu-bootstrap, and the example config the .deb and .rpm install as
// /etc/gpu-bootstrap/config.yaml. A renamed key or a wrong value in an
// example fails here.
func TestExampleConfigsAreValid(t *testing.T) {
	const packaged = "../../packaging/etc/gpu-bootstrap/config.yaml"
	data, err := os.ReadFile(packaged)
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{packaged: string(data)}
	err = filepath.WalkDir("../../examples", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case d.Name() == "gpu-bootstrap.yaml":
			configs[path] = string(data)
		case strings.HasSuffix(path, ".sh") || strings.HasSuffix(path, ".mime"):
			for i, doc := range heredocConfigs(string(data)) {
				configs[path+"#heredoc"+string(rune('1'+i))] = doc
			}
		case strings.HasPrefix(string(data), "#cloud-config"):
			for name, doc := range cloudInitConfigs(t, path, data) {
				configs[name] = doc
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) < 5 {
		t.Fatalf("found %d example configs, want the Packer, user-data and cloud-init ones (at least 5): %v", len(configs), configs)
	}
	for name, doc := range configs {
		cfg, err := bootstrap.ParseConfig(name, []byte(doc))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(cfg.Steps()) == 0 {
			t.Errorf("%s: configures nothing", name)
		}
	}
}

var heredoc = regexp.MustCompile(`(?s)<<'CONFIG'\n(.*?)\nCONFIG\n`)

func heredocConfigs(script string) []string {
	var docs []string
	for _, m := range heredoc.FindAllStringSubmatch(script, -1) {
		docs = append(docs, m[1])
	}
	return docs
}

func cloudInitConfigs(t *testing.T, path string, data []byte) map[string]string {
	var doc struct {
		WriteFiles []struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Errorf("%s: not YAML: %v", path, err)
		return nil
	}
	configs := map[string]string{}
	for _, f := range doc.WriteFiles {
		if strings.HasPrefix(f.Path, "/etc/gpu-bootstrap/") {
			configs[path+"#"+f.Path] = f.Content
		}
	}
	return configs
}

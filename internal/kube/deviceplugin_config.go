package kube

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// The values NVIDIA's device plugin accepts (api/config/v1/consts.go in
// NVIDIA/k8s-device-plugin), each listed once for validators and docs.
var (
	MIGStrategies        = []string{"none", "single", "mixed"}
	DeviceListStrategies = []string{"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"}
	DeviceIDStrategies   = []string{"uuid", "index"}
)

// sharedResourceSuffix is what renameByDefault appends to a shared
// resource's name (DefaultSharedResourceNameSuffix upstream).
const sharedResourceSuffix = ".shared"

// DevicePluginConfig is the device plugin's config file (`version: v1`),
// the part of it this provider manages: the flags and GPU sharing.
type DevicePluginConfig struct {
	MIGStrategy        string
	FailOnInitError    bool
	PassDeviceSpecs    bool
	DeviceListStrategy []string
	DeviceIDStrategy   string
	TimeSlicing        *SharingConfig
	MPS                *SharingConfig
}

// SharingConfig is `sharing.timeSlicing` or `sharing.mps`.
type SharingConfig struct {
	RenameByDefault bool
	// FailRequestsGreaterThanOne nil leaves the plugin's default: false for
	// time-slicing, true for MPS.
	FailRequestsGreaterThanOne *bool
	Resources                  []SharedResource
}

// SharedResource is one entry of `resources`: every device of Name is
// advertised Replicas times.
type SharedResource struct {
	Name     string
	Rename   string
	Replicas int64
}

// DefaultDevicePluginConfig is what the plugin does without a config file.
func DefaultDevicePluginConfig() DevicePluginConfig {
	return DevicePluginConfig{
		MIGStrategy:        "none",
		FailOnInitError:    true,
		DeviceListStrategy: []string{"envvar"},
		DeviceIDStrategy:   "uuid",
	}
}

// The file's YAML shape, with the upstream keys (api/config/v1: Config,
// Flags, PluginCommandLineFlags, Sharing, ReplicatedResources).
type pluginConfigFile struct {
	Version string            `yaml:"version"`
	Flags   pluginConfigFlags `yaml:"flags"`
	Sharing *pluginSharing    `yaml:"sharing,omitempty"`
}

type pluginConfigFlags struct {
	MIGStrategy     string            `yaml:"migStrategy"`
	FailOnInitError bool              `yaml:"failOnInitError"`
	Plugin          pluginConfigOwnFl `yaml:"plugin"`
}

type pluginConfigOwnFl struct {
	PassDeviceSpecs    bool     `yaml:"passDeviceSpecs"`
	DeviceListStrategy []string `yaml:"deviceListStrategy,flow"`
	DeviceIDStrategy   string   `yaml:"deviceIDStrategy"`
}

type pluginSharing struct {
	TimeSlicing *pluginReplicated `yaml:"timeSlicing,omitempty"`
	MPS         *pluginReplicated `yaml:"mps,omitempty"`
}

type pluginReplicated struct {
	RenameByDefault            bool                     `yaml:"renameByDefault"`
	FailRequestsGreaterThanOne *bool                    `yaml:"failRequestsGreaterThanOne,omitempty"`
	Resources                  []pluginReplicatedDevice `yaml:"resources"`
}

type pluginReplicatedDevice struct {
	Name     string `yaml:"name"`
	Rename   string `yaml:"rename,omitempty"`
	Replicas int64  `yaml:"replicas"`
}

// Render writes the config file. The same config always gives the same
// bytes, so its hash (Hash) changes exactly when the config does.
func (c DevicePluginConfig) Render() ([]byte, error) {
	file := pluginConfigFile{
		Version: "v1",
		Flags: pluginConfigFlags{
			MIGStrategy:     c.MIGStrategy,
			FailOnInitError: c.FailOnInitError,
			Plugin: pluginConfigOwnFl{
				PassDeviceSpecs:    c.PassDeviceSpecs,
				DeviceListStrategy: c.DeviceListStrategy,
				DeviceIDStrategy:   c.DeviceIDStrategy,
			},
		},
	}
	if c.TimeSlicing != nil || c.MPS != nil {
		file.Sharing = &pluginSharing{TimeSlicing: c.TimeSlicing.file(), MPS: c.MPS.file()}
	}
	var buf bytes.Buffer
	buf.WriteString("# NVIDIA device plugin config, managed by terraform-provider-gpu (gpu_device_plugin).\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(file); err != nil {
		return nil, fmt.Errorf("rendering the device plugin config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rendering the device plugin config: %w", err)
	}
	return buf.Bytes(), nil
}

func (s *SharingConfig) file() *pluginReplicated {
	if s == nil {
		return nil
	}
	out := &pluginReplicated{RenameByDefault: s.RenameByDefault, FailRequestsGreaterThanOne: s.FailRequestsGreaterThanOne}
	for _, r := range s.Resources {
		out.Resources = append(out.Resources, pluginReplicatedDevice(r))
	}
	return out
}

// ParseDevicePluginConfig reads a config file, filling what it leaves out
// with the plugin's defaults.
func ParseDevicePluginConfig(data []byte) (DevicePluginConfig, error) {
	defaults := DefaultDevicePluginConfig()
	file := pluginConfigFile{Flags: pluginConfigFlags{
		MIGStrategy:     defaults.MIGStrategy,
		FailOnInitError: defaults.FailOnInitError,
		Plugin:          pluginConfigOwnFl{DeviceListStrategy: defaults.DeviceListStrategy, DeviceIDStrategy: defaults.DeviceIDStrategy},
	}}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return DevicePluginConfig{}, fmt.Errorf("parsing the device plugin config: %w", err)
	}
	if file.Version != "" && file.Version != "v1" {
		return DevicePluginConfig{}, fmt.Errorf("parsing the device plugin config: unknown version %q (want v1)", file.Version)
	}
	c := DevicePluginConfig{
		MIGStrategy:        file.Flags.MIGStrategy,
		FailOnInitError:    file.Flags.FailOnInitError,
		PassDeviceSpecs:    file.Flags.Plugin.PassDeviceSpecs,
		DeviceListStrategy: file.Flags.Plugin.DeviceListStrategy,
		DeviceIDStrategy:   file.Flags.Plugin.DeviceIDStrategy,
	}
	if file.Sharing != nil {
		c.TimeSlicing = file.Sharing.TimeSlicing.config()
		c.MPS = file.Sharing.MPS.config()
	}
	return c, nil
}

func (r *pluginReplicated) config() *SharingConfig {
	if r == nil {
		return nil
	}
	out := &SharingConfig{RenameByDefault: r.RenameByDefault, FailRequestsGreaterThanOne: r.FailRequestsGreaterThanOne}
	for _, d := range r.Resources {
		out.Resources = append(out.Resources, SharedResource(d))
	}
	return out
}

// ConfigHash is a short digest of a rendered config, for the pod template
// annotation that rolls the plugin's pods when the config changes.
func ConfigHash(rendered []byte) string {
	sum := sha256.Sum256(rendered)
	return hex.EncodeToString(sum[:8])
}

// Sharing is the sharing the plugin applies: MPS when it replicates
// anything, else time-slicing when it does, else nil (as upstream's
// Sharing.SharingStrategy decides).
func (c DevicePluginConfig) Sharing() *SharingConfig {
	for _, s := range []*SharingConfig{c.MPS, c.TimeSlicing} {
		if s == nil {
			continue
		}
		for _, r := range s.Resources {
			if r.Replicas > 1 {
				return s
			}
		}
	}
	return nil
}

// AdvertisedGPUResource is the resource under which the plugin advertises
// full GPUs: nvidia.com/gpu, or nvidia.com/gpu.shared when they are
// shared with renameByDefault. Like the plugin since v0.12 it ignores a
// per-resource `rename`.
func (c DevicePluginConfig) AdvertisedGPUResource() string {
	if s := c.Sharing(); s != nil && s.RenameByDefault {
		for _, r := range s.Resources {
			if r.Name == gpulabels.ResourceName && r.Replicas > 1 {
				return gpulabels.ResourceName + sharedResourceSuffix
			}
		}
	}
	return gpulabels.ResourceName
}

// CountsAsGPUs reports whether a node resource holds devices this plugin
// advertises: the full-GPU resource, and with the mixed MIG strategy every
// nvidia.com/mig-* resource too.
func (c DevicePluginConfig) CountsAsGPUs(resource string) bool {
	if resource == c.AdvertisedGPUResource() {
		return true
	}
	return c.MIGStrategy == "mixed" && strings.HasPrefix(resource, "nvidia.com/mig-")
}

package k8s

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// devicePluginImage is what marks a container as NVIDIA's device plugin:
// nvcr.io/nvidia/k8s-device-plugin, or a mirror of it.
const devicePluginImage = "k8s-device-plugin"

// The same image also ships GPU Feature Discovery, the MPS control daemon and
// the config manager; those run with a command of their own. The plugin runs
// with the image's entrypoint or an explicit nvidia-device-plugin command.
const devicePluginCommand = "nvidia-device-plugin"

// configMapGetter reads a ConfigMap (from the API server, or a test's map).
type configMapGetter func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

// apiConfigMaps reads ConfigMaps through client.
func apiConfigMaps(client kubernetes.Interface) configMapGetter {
	return func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
		return client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}

// advertisement is what one running plugin registers with the kubelet: a
// resource and how many devices it lists per physical GPU.
type advertisement struct {
	resource corev1.ResourceName
	replicas int64
}

// pluginContainer returns the device-plugin container of pod, if any.
func pluginContainer(pod *corev1.Pod) (*corev1.Container, bool) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !strings.Contains(c.Image, devicePluginImage) {
			continue
		}
		if len(c.Command) == 0 || path.Base(c.Command[0]) == devicePluginCommand {
			return c, true
		}
	}
	return nil, false
}

// pluginConfig is the part of the plugin's config file (api/config/v1 in
// NVIDIA/k8s-device-plugin) that decides what it advertises.
type pluginConfig struct {
	Version string `json:"version"`
	Sharing struct {
		TimeSlicing *replicatedResources `json:"timeSlicing"`
		MPS         *replicatedResources `json:"mps"`
	} `json:"sharing"`
}

type replicatedResources struct {
	RenameByDefault bool `json:"renameByDefault"`
	Resources       []struct {
		Name     string `json:"name"`
		Rename   string `json:"rename"`
		Replicas int64  `json:"replicas"`
	} `json:"resources"`
}

// advertisementOf reads the config the plugin in pod would read at start
// and says what it would advertise for full GPUs. Like the plugin from
// v0.12 on, it ignores a per-resource `rename` (only renameByDefault,
// which appends ".shared", is honored), and MPS wins over time-slicing.
// An error means the plugin would fail to start (no or a bad config).
func advertisementOf(ctx context.Context, configMaps configMapGetter, pod *corev1.Pod, c *corev1.Container) (advertisement, error) {
	plain := advertisement{resource: gpulabels.ResourceName, replicas: 1}
	file := configFilePath(c)
	if file == "" {
		return plain, nil
	}
	data, err := readMountedConfig(ctx, configMaps, pod, c, file)
	if err != nil {
		return advertisement{}, err
	}
	var config pluginConfig
	if err := yaml.Unmarshal(data, &config); err != nil {
		return advertisement{}, fmt.Errorf("parsing the plugin config %s: %w", file, err)
	}
	if config.Version != "" && config.Version != "v1" {
		return advertisement{}, fmt.Errorf("plugin config %s: unknown version %q", file, config.Version)
	}
	for _, sharing := range []*replicatedResources{config.Sharing.MPS, config.Sharing.TimeSlicing} {
		if sharing == nil {
			continue
		}
		for _, r := range sharing.Resources {
			if r.Name != gpulabels.ResourceName || r.Replicas < 2 {
				continue
			}
			adv := advertisement{resource: gpulabels.ResourceName, replicas: r.Replicas}
			if sharing.RenameByDefault {
				adv.resource = gpulabels.ResourceName + ".shared"
			}
			return adv, nil
		}
	}
	return plain, nil
}

// configFilePath is where the plugin reads its config: --config-file or
// the CONFIG_FILE variable; "" when neither is set.
func configFilePath(c *corev1.Container) string {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, arg := range args {
		if v, ok := strings.CutPrefix(arg, "--config-file="); ok {
			return v
		}
		if arg == "--config-file" && i+1 < len(args) {
			return args[i+1]
		}
	}
	for _, env := range c.Env {
		if env.Name == "CONFIG_FILE" {
			return env.Value
		}
	}
	return ""
}

// readMountedConfig returns the content of file as the container sees it,
// from the ConfigMap volume mounted over it. When file is on another kind
// of volume (the Helm chart's config-manager copies the chosen config into
// an emptyDir), it falls back to the pod's one ConfigMap volume and its
// DEFAULT_CONFIG key, or its only key.
func readMountedConfig(ctx context.Context, configMaps configMapGetter, pod *corev1.Pod, c *corev1.Container, file string) ([]byte, error) {
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		dir := strings.TrimSuffix(m.MountPath, "/") + "/"
		if strings.HasPrefix(file, dir) && (mount == nil || len(m.MountPath) > len(mount.MountPath)) {
			mount = m
		}
	}
	volumes := map[string]*corev1.Volume{}
	var configMapVolumes []*corev1.Volume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		volumes[v.Name] = v
		if v.ConfigMap != nil {
			configMapVolumes = append(configMapVolumes, v)
		}
	}
	var source *corev1.ConfigMapVolumeSource
	key := ""
	if mount != nil && volumes[mount.Name] != nil && volumes[mount.Name].ConfigMap != nil {
		source = volumes[mount.Name].ConfigMap
		key = strings.TrimPrefix(file, strings.TrimSuffix(mount.MountPath, "/")+"/")
		if mount.SubPath != "" {
			key = path.Join(mount.SubPath, key)
		}
		for _, item := range source.Items {
			if item.Path == key {
				key = item.Key
			}
		}
	} else if len(configMapVolumes) == 1 {
		source = configMapVolumes[0].ConfigMap
		key = defaultConfigName(pod)
	} else {
		return nil, fmt.Errorf("plugin config %s is not on a ConfigMap volume", file)
	}

	cm, err := configMaps(ctx, pod.Namespace, source.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the plugin config %s from ConfigMap %s/%s: %w", file, pod.Namespace, source.Name, err)
	}
	if key == "" && len(cm.Data) == 1 {
		for k := range cm.Data {
			key = k
		}
	}
	data, ok := cm.Data[key]
	if !ok {
		return nil, fmt.Errorf("plugin config %s: ConfigMap %s/%s has no key %q", file, pod.Namespace, source.Name, key)
	}
	return []byte(data), nil
}

// defaultConfigName is the DEFAULT_CONFIG of the config-manager containers.
func defaultConfigName(pod *corev1.Pod) string {
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			for _, env := range c.Env {
				if env.Name == "DEFAULT_CONFIG" && env.Value != "" {
					return env.Value
				}
			}
		}
	}
	return ""
}

package k8s

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

func TestAdvertisementOf(t *testing.T) {
	mounted := func(env []corev1.EnvVar, args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "plugin", Namespace: "nvidia"},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", Env: env, Args: args,
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/nvidia"}},
				}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "plugin-config"},
				}}}},
			},
		}
	}
	configFile := []corev1.EnvVar{{Name: "CONFIG_FILE", Value: "/etc/nvidia/config.yaml"}}
	tests := []struct {
		description string
		pod         *corev1.Pod
		config      string // content of plugin-config's config.yaml; "" for no ConfigMap
		want        advertisement
		wantError   string
	}{
		{
			description: "A plugin without a config file advertises one nvidia.com/gpu per GPU.",
			pod:         mounted(nil),
			want:        advertisement{gpulabels.ResourceName, 1},
		},
		{
			description: "Time-slicing replicas multiply the GPUs.",
			pod:         mounted(configFile),
			config:      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
			want:        advertisement{gpulabels.ResourceName, 4},
		},
		{
			description: "renameByDefault advertises nvidia.com/gpu.shared.",
			pod:         mounted(nil, "--config-file=/etc/nvidia/config.yaml"),
			config:      "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n",
			want:        advertisement{sharedGPU, 3},
		},
		{
			description: "A per-resource rename is ignored, as the plugin does since v0.12.",
			pod:         mounted(configFile),
			config:      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-quarter\n      replicas: 4\n",
			want:        advertisement{gpulabels.ResourceName, 4},
		},
		{
			description: "MPS replicas multiply the GPUs like time-slicing.",
			pod:         mounted(nil, "--config-file", "/etc/nvidia/config.yaml"),
			config:      "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n",
			want:        advertisement{gpulabels.ResourceName, 2},
		},
		{
			description: "A config file whose ConfigMap is missing keeps the plugin from starting.",
			pod:         mounted(configFile),
			wantError:   "ConfigMap nvidia/plugin-config",
		},
		{
			description: "An unknown config version keeps the plugin from starting.",
			pod:         mounted(configFile),
			config:      "version: v2\n",
			wantError:   "unknown version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			configMaps := func(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
				if tt.config == "" || namespace != "nvidia" || name != "plugin-config" {
					return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
				}
				return &corev1.ConfigMap{Data: map[string]string{"config.yaml": tt.config}}, nil
			}
			c, ok := pluginContainer(tt.pod)
			require.True(t, ok)
			got, err := advertisementOf(context.Background(), configMaps, tt.pod, c)
			if tt.wantError != "" {
				require.ErrorContains(t, err, tt.wantError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPluginContainer(t *testing.T) {
	tests := []struct {
		description string
		container   corev1.Container
		want        bool
	}{
		{"The plugin image with its entrypoint is the plugin.", corev1.Container{Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}, true},
		{"An explicit nvidia-device-plugin command is the plugin.", corev1.Container{Image: "mirror.example/k8s-device-plugin:v0.20.0", Command: []string{"/usr/bin/nvidia-device-plugin"}}, true},
		{"GPU Feature Discovery from the same image is not.", corev1.Container{Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", Command: []string{"gpu-feature-discovery"}}, false},
		{"Another image is not.", corev1.Container{Image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			_, got := pluginContainer(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{tt.container}}})
			require.Equal(t, tt.want, got)
		})
	}
}

package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func testDevicePluginSpec() DevicePluginSpec {
	one := intstr.FromInt32(1)
	return DevicePluginSpec{
		Namespace: "nvidia", Name: "plugin", Image: DefaultDevicePluginImage, ImagePullPolicy: corev1.PullIfNotPresent,
		NodeSelector:      map[string]string{"pool": "gpu"},
		Tolerations:       []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: DefaultDevicePluginPrio, GPUNodeAffinity: true,
		UpdateStrategy: "RollingUpdate", MaxUnavailable: &one,
		Config: DefaultDevicePluginConfig(),
	}
}

func container(ds *appsv1ac.DaemonSetApplyConfiguration) corev1ac.ContainerApplyConfiguration {
	return ds.Spec.Template.Spec.Containers[0]
}

func TestBuildDevicePluginObjects(t *testing.T) {
	t.Run("The plugin reads its config from the ConfigMap through CONFIG_FILE.", func(t *testing.T) {
		objs, err := BuildDevicePluginObjects(testDevicePluginSpec())
		require.NoError(t, err)
		require.Nil(t, objs.RuntimeClass)
		require.Nil(t, objs.Service)
		require.Len(t, objs.DaemonSets, 1)
		ds := objs.DaemonSets[0]
		require.Equal(t, "plugin", *ds.Name)
		c := container(ds)
		require.Contains(t, c.Env, *envVar("CONFIG_FILE", "/config/config.yaml"))
		require.Contains(t, objs.ConfigMap.Data, "config.yaml")
		rendered, err := testDevicePluginSpec().Config.Render()
		require.NoError(t, err)
		require.Equal(t, string(rendered), objs.ConfigMap.Data["config.yaml"])
		require.Equal(t, ConfigHash(rendered), ds.Spec.Template.Annotations[AnnotationConfigHash])
		require.Equal(t, "plugin-config", *ds.Spec.Template.Spec.Volumes[1].ConfigMap.Name)
		require.Equal(t, map[string]string{"pool": "gpu"}, ds.Spec.Template.Spec.NodeSelector)
		require.Equal(t, DefaultDevicePluginPrio, *ds.Spec.Template.Spec.PriorityClassName)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation, "the plain plugin needs no privilege")
	})
	t.Run("A config change changes the pod template's hash, and only that.", func(t *testing.T) {
		before, err := BuildDevicePluginObjects(testDevicePluginSpec())
		require.NoError(t, err)
		spec := testDevicePluginSpec()
		spec.Config.TimeSlicing = &SharingConfig{Resources: []SharedResource{{Name: "nvidia.com/gpu", Replicas: 4}}}
		after, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		require.NotEqual(t, before.ConfigHash, after.ConfigHash)
		require.Equal(t, after.ConfigHash, after.DaemonSets[0].Spec.Template.Annotations[AnnotationConfigHash])
	})
	t.Run("The default node affinity ORs the two GPU node labels.", func(t *testing.T) {
		objs, err := BuildDevicePluginObjects(testDevicePluginSpec())
		require.NoError(t, err)
		terms := objs.DaemonSets[0].Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		require.Len(t, terms, 2)
		require.Equal(t, "nvidia.com/gpu.present", *terms[0].MatchExpressions[0].Key)
		require.Equal(t, "feature.node.kubernetes.io/pci-10de.present", *terms[1].MatchExpressions[0].Key)
	})
	t.Run("Every component gets its DaemonSet, the exporter a Service, MPS its control daemon.", func(t *testing.T) {
		spec := testDevicePluginSpec()
		spec.RuntimeClass = &RuntimeClassSpec{Create: true, Name: "nvidia", Handler: "nvidia"}
		spec.GFD = &GFDSpec{}
		spec.DCGM = &DCGMSpec{Image: DefaultDCGMExporterImage, Port: 9500}
		spec.Config.MPS = &SharingConfig{Resources: []SharedResource{{Name: "nvidia.com/gpu", Replicas: 2}}}
		spec.Owner = "tf-0123"
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		var names []string
		for _, ds := range objs.DaemonSets {
			names = append(names, *ds.Name)
			require.Equal(t, "nvidia", *ds.Spec.Template.Spec.RuntimeClassName)
		}
		require.Equal(t, []string{"plugin", "plugin-mps-control-daemon", "plugin-gfd", "plugin-dcgm-exporter"}, names)
		require.Equal(t, spec.DaemonSetNames(), names)
		require.Equal(t, "nvidia", *objs.RuntimeClass.Handler)
		require.Equal(t, "tf-0123", objs.RuntimeClass.Annotations[AnnotationOwner])
		require.Equal(t, "tf-0123", objs.ConfigMap.Annotations[AnnotationOwner])
		require.Equal(t, "tf-0123", objs.Service.Annotations[AnnotationOwner])
		for _, ds := range objs.DaemonSets {
			require.Equal(t, "tf-0123", ds.Annotations[AnnotationOwner], "every object carries its owner")
			require.NotContains(t, ds.Spec.Template.Annotations, AnnotationOwner, "the marker is not in the pod template: a new owner must not roll the pods")
		}
		require.EqualValues(t, 9500, *objs.Service.Spec.Ports[0].Port)
		require.Equal(t, DefaultDevicePluginImage, *container(objs.DaemonSets[2]).Image, "GFD runs the plugin's image by default")
		require.Equal(t, "true", objs.DaemonSets[1].Spec.Template.Spec.NodeSelector["nvidia.com/mps.capable"])
		require.Contains(t, container(objs.DaemonSets[0]).Env, *envVar("MPS_ROOT", "/run/nvidia/mps"))
	})
	t.Run("MIG strategies need CAP_SYS_ADMIN, passing device specs privilege.", func(t *testing.T) {
		spec := testDevicePluginSpec()
		spec.Config.MIGStrategy = "mixed"
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		require.Equal(t, []corev1.Capability{"SYS_ADMIN"}, container(objs.DaemonSets[0]).SecurityContext.Capabilities.Add)
		spec.Config.PassDeviceSpecs = true
		objs, err = BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		require.True(t, *container(objs.DaemonSets[0]).SecurityContext.Privileged)
	})
	t.Run("OnDelete has no rolling update settings.", func(t *testing.T) {
		spec := testDevicePluginSpec()
		spec.UpdateStrategy = "OnDelete"
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		require.Nil(t, objs.DaemonSets[0].Spec.UpdateStrategy.RollingUpdate)
	})
}

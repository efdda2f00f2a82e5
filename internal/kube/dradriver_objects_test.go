package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

func testDRADriverSpec() DRADriverSpec {
	return DRADriverSpec{
		Namespace: "nvidia-dra", Name: DefaultDRADriverName, Image: DefaultDRADriverImage, ImagePullPolicy: corev1.PullIfNotPresent,
		NodeSelector:      map[string]string{"gpu-path": "dra"},
		PriorityClassName: DefaultDRADriverPriority, GPUNodeAffinity: true,
		DriverRoot: DefaultDRADriverRoot, LogVerbosity: DefaultDRADriverLogVerbosity,
		DeviceClasses: DRADeviceClasses,
	}
}

func envOf(t *testing.T, objs DRADriverObjects, name string) (string, bool) {
	t.Helper()
	ctr := objs.DaemonSet.Spec.Template.Spec.Containers[0]
	require.Equal(t, draGPUsContainer, *ctr.Name)
	for _, e := range ctr.Env {
		if *e.Name == name {
			if e.Value == nil {
				return "", true
			}
			return *e.Value, true
		}
	}
	return "", false
}

func TestBuildDRADriverObjects(t *testing.T) {
	t.Run("The names are the chart's, derived from the release name.", func(t *testing.T) {
		objs := BuildDRADriverObjects(testDRADriverSpec())
		require.Equal(t, "nvidia-dra-driver-gpu-kubelet-plugin", *objs.DaemonSet.Name)
		require.Equal(t, "nvidia-dra-driver-gpu-service-account-kubeletplugin", *objs.ServiceAccount.Name)
		require.Equal(t, "nvidia-dra-driver-gpu-clusterrole-kubeletplugin", *objs.ClusterRole.Name)
		require.Equal(t, *objs.ServiceAccount.Name, *objs.DaemonSet.Spec.Template.Spec.ServiceAccountName)
		require.Equal(t, *objs.ClusterRole.Name, *objs.ClusterRoleBinding.RoleRef.Name)
		require.Equal(t, "nvidia-dra", *objs.ClusterRoleBinding.Subjects[0].Namespace)
	})
	t.Run("The kubelet plugin runs the gpus container of the driver's image, privileged, with the chart's probes.", func(t *testing.T) {
		objs := BuildDRADriverObjects(testDRADriverSpec())
		pod := objs.DaemonSet.Spec.Template.Spec
		require.Len(t, pod.Containers, 1, "no compute-domains container")
		ctr := pod.Containers[0]
		require.Equal(t, DefaultDRADriverImage, *ctr.Image)
		require.True(t, *ctr.SecurityContext.Privileged)
		require.EqualValues(t, 51516, *ctr.LivenessProbe.GRPC.Port)
		require.Equal(t, map[string]string{"gpu-path": "dra"}, pod.NodeSelector)
		image, ok := envOf(t, objs, "IMAGE_NAME")
		require.True(t, ok)
		require.Equal(t, DefaultDRADriverImage, image)
		_, ok = envOf(t, objs, draEnvFeatureGates)
		require.False(t, ok, "no FEATURE_GATES without gates, as the chart")
	})
	t.Run("Feature gates are written as the chart writes them, in name order; MPSSupport lets the plugin manage Deployments.", func(t *testing.T) {
		spec := testDRADriverSpec()
		require.Empty(t, BuildDRADriverObjects(spec).Role.Rules)
		spec.FeatureGates = map[string]bool{"TimeSlicingSettings": true, "MPSSupport": true, "IMEXDaemonsWithDNSNames": false}
		objs := BuildDRADriverObjects(spec)
		gates, _ := envOf(t, objs, draEnvFeatureGates)
		require.Equal(t, "IMEXDaemonsWithDNSNames=false,MPSSupport=true,TimeSlicingSettings=true", gates)
		require.Equal(t, spec.FeatureGates, parseFeatureGates(gates+","), "read back, a trailing comma (the chart's) included")
		require.Len(t, objs.Role.Rules, 1)
		require.Equal(t, []string{"deployments"}, objs.Role.Rules[0].Resources)
	})
	t.Run("The DeviceClasses select the driver's devices by type; only the GPU class maps the extended resource.", func(t *testing.T) {
		spec := testDRADriverSpec()
		spec.ExtendedResourceName = "nvidia.com/gpu"
		objs := BuildDRADriverObjects(spec)
		require.Len(t, objs.DeviceClasses, 2)
		gpu, mig := objs.DeviceClasses[0], objs.DeviceClasses[1]
		require.Equal(t, nvdra.DeviceClassGPU, *gpu.Name)
		require.Equal(t, "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", *gpu.Spec.Selectors[0].CEL.Expression)
		require.Equal(t, "nvidia.com/gpu", *gpu.Spec.ExtendedResourceName)
		require.Equal(t, "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", *mig.Spec.Selectors[0].CEL.Expression)
		require.Nil(t, mig.Spec.ExtendedResourceName)
		spec.DeviceClasses = []string{nvdra.DeviceClassMIG}
		require.Len(t, BuildDRADriverObjects(spec).DeviceClasses, 1)
	})
	t.Run("A driver root other than / is mounted from its parent, following mounts made later.", func(t *testing.T) {
		spec := testDRADriverSpec()
		require.Equal(t, "/", draDriverRootParent("/"))
		spec.DriverRoot = "/run/nvidia/driver/"
		require.Equal(t, "/run/nvidia", draDriverRootParent(spec.DriverRoot))
		init := BuildDRADriverObjects(spec).DaemonSet.Spec.Template.Spec.InitContainers[0]
		require.Equal(t, corev1.MountPropagationHostToContainer, *init.VolumeMounts[0].MountPropagation)
	})
	t.Run("The chart's GPU node affinity is read back as such, and another is not.", func(t *testing.T) {
		want, err := asObject[corev1.NodeSelector](draGPUNodeSelector())
		require.NoError(t, err)
		affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: want}}
		require.True(t, hasDRAGPUNodeAffinity(affinity))
		other, err := asObject[corev1.NodeSelector](GPUNodeSelector())
		require.NoError(t, err)
		require.False(t, hasDRAGPUNodeAffinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: other}}),
			"the device plugin's two-term affinity is not the chart's")
	})
}

func testSlice(name, node string, generation, count int64, devices int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: nvdra.DriverName, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: count},
		},
	}
	for i := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-" + string(rune('0'+i))})
	}
	return s
}

func TestPoolOf(t *testing.T) {
	byNode := nodeSlices{}
	require.Equal(t, "n1", byNode.observe(testSlice("a", "n1", 1, 2, 4), false))
	p := poolOf(byNode["n1"])
	require.False(t, p.Complete, "one of two slices")
	require.Equal(t, "1 of the 2 ResourceSlices of its pool's newest generation are published", p.describe())
	byNode.observe(testSlice("b", "n1", 1, 2, 4), false)
	p = poolOf(byNode["n1"])
	require.True(t, p.Complete)
	require.Equal(t, 8, p.Devices)
	byNode.observe(testSlice("c", "n1", 2, 1, 1), false)
	p = poolOf(byNode["n1"])
	require.True(t, p.Complete, "a newer generation in one slice supersedes the older")
	require.Equal(t, 1, p.Devices)
	byNode.observe(testSlice("c", "n1", 2, 1, 1), true)
	require.True(t, poolOf(byNode["n1"]).Complete, "back to generation 1, complete")

	other := testSlice("d", "n2", 1, 1, 1)
	other.Spec.Driver = "other.example.com"
	require.Empty(t, byNode.observe(other, false), "another driver's slice is no node's pool")
	require.Equal(t, "no ResourceSlice of driver gpu.nvidia.com is published for it", poolOf(byNode["n2"]).describe())
}

package kube

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeFeatureDiscoveryDeployment(t *testing.T) {
	spec := testDevicePluginSpec()
	spec.GFD = &GFDSpec{DeployNFD: true}
	spec.Owner = "tf-0123"

	t.Run("GFD writes the features file that NFD's worker reads, not NodeFeature objects it has no API access for.", func(t *testing.T) {
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		gfd := objs.DaemonSets[1]
		require.Equal(t, "plugin-gfd", *gfd.Name)
		require.Contains(t, container(gfd).Env, *envVar("USE_NODE_FEATURE_API", "false"))
		require.False(t, *gfd.Spec.Template.Spec.AutomountServiceAccountToken)
		require.Equal(t, nfdFeaturesDir, *container(gfd).VolumeMounts[0].MountPath)
	})
	t.Run("The worker mounts features.d, runs on the plugin's nodes without the GPU affinity, and has its own account.", func(t *testing.T) {
		worker := spec.nfdWorkerDaemonSet()
		pod := worker.Spec.Template.Spec
		require.Equal(t, "plugin-nfd-worker", *worker.Name)
		require.Nil(t, pod.Affinity, "the worker is what labels a fresh GPU node for the affinity")
		require.Nil(t, pod.RuntimeClassName)
		require.Nil(t, pod.AutomountServiceAccountToken, "the worker publishes a NodeFeature through the API")
		require.Equal(t, "plugin-nfd-worker", *pod.ServiceAccountName)
		require.Equal(t, map[string]string{"pool": "gpu"}, pod.NodeSelector)
		require.Equal(t, spec.Tolerations[0].Key, *pod.Tolerations[0].Key)
		var mounted []string
		for _, m := range pod.Containers[0].VolumeMounts {
			mounted = append(mounted, *m.MountPath)
		}
		require.Contains(t, mounted, nfdFeaturesDir)
		require.Contains(t, mounted, nfdConfigDir)
		require.Equal(t, []string{"nfd-worker"}, pod.Containers[0].Command)
		require.Contains(t, spec.DaemonSetNames(), "plugin-nfd-worker", "the rollout wait includes the worker")
	})
	t.Run("The master may write nvidia.com labels.", func(t *testing.T) {
		master := spec.nfdMasterDeployment()
		c := master.Spec.Template.Spec.Containers[0]
		require.Equal(t, []string{"nfd-master"}, c.Command)
		require.Equal(t, []string{"-extra-label-ns=nvidia.com"}, c.Args)
		require.Equal(t, DefaultNFDImage, *c.Image)
		require.Equal(t, "plugin-nfd-master", *master.Spec.Template.Spec.ServiceAccountName)
		require.Equal(t, "tf-0123", master.Annotations[AnnotationOwner])
	})
	t.Run("Every object is named after the deployment, cluster-wide ones after its namespace too, and marked as the owner's.", func(t *testing.T) {
		var names []string
		for _, o := range spec.nfdObjects(fake.NewClientset(), true) {
			names = append(names, o.String())
		}
		require.Equal(t, []string{
			"ServiceAccount nvidia/plugin-nfd-master", "ServiceAccount nvidia/plugin-nfd-worker",
			"ClusterRole nvidia:plugin-nfd-master", "ClusterRoleBinding nvidia:plugin-nfd-master",
			"Role nvidia/plugin-nfd-worker", "RoleBinding nvidia/plugin-nfd-worker",
			"ConfigMap nvidia/plugin-nfd-worker-conf", "Deployment nvidia/plugin-nfd-master", "DaemonSet nvidia/plugin-nfd-worker",
		}, names)
	})
	t.Run("The CRDs are NFD v0.19.0's three, marked as the owner's.", func(t *testing.T) {
		bodies, err := spec.nfdCRDBodies()
		require.NoError(t, err)
		require.Len(t, bodies, 3)
		for _, name := range NFDCRDNames() {
			var crd struct {
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					Group    string `json:"group"`
					Versions []struct {
						Name string `json:"name"`
					} `json:"versions"`
				} `json:"spec"`
			}
			require.NoError(t, json.Unmarshal(bodies[name], &crd))
			require.Equal(t, name, crd.Metadata.Name)
			require.Equal(t, "nfd.k8s-sigs.io", crd.Spec.Group)
			require.Equal(t, "v1alpha1", crd.Spec.Versions[0].Name)
			require.Equal(t, "tf-0123", crd.Metadata.Annotations[AnnotationOwner])
		}
	})
}

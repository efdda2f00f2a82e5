package k8s

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// StartDRADriver deploys what the DRA driver simulator needs of NVIDIA's
// DRA driver chart, for tests whose subject comes after the driver (the
// provider's own deployment of it is tested on its own): the chart's GPU
// and MIG DeviceClasses, unless they exist, and its kubelet-plugin
// DaemonSet in namespace (which must exist) on the nodes nodeSelector
// selects. It returns once each of waitFor (DRA nodes among those) has
// published its ResourceSlice.
func (c *Cluster) StartDRADriver(ctx context.Context, namespace string, nodeSelector map[string]string, waitFor ...string) error {
	for _, class := range []*resourceapi.DeviceClass{
		DRADeviceClass(nvdra.DeviceClassGPU, nvdra.DeviceTypeGPU),
		DRADeviceClass(nvdra.DeviceClassMIG, nvdra.DeviceTypeMIG),
	} {
		if _, err := c.client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DeviceClass %s: %w", class.Name, err)
		}
	}
	ds := DRAKubeletPluginDaemonSet(namespace, nodeSelector)
	if _, err := c.client.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating DaemonSet %s/%s: %w", namespace, ds.Name, err)
	}
	for _, node := range waitFor {
		if err := c.WaitForDRASlices(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// WaitForDRASlices watches until node has published a ResourceSlice of
// NVIDIA's DRA driver.
func (c *Cluster) WaitForDRASlices(ctx context.Context, node string) error {
	_, err := waitFor(ctx, c.client.ResourceV1().RESTClient(), "resourceslices", "", DRASlicesOf(node), func(*resourceapi.ResourceSlice) bool { return true })
	if err != nil {
		return fmt.Errorf("waiting for node %s's ResourceSlices: %w", node, err)
	}
	return nil
}

// DRASlicesOf narrows a list or watch of ResourceSlices to those NVIDIA's
// DRA driver published for node, as the kubelet narrows them.
func DRASlicesOf(node string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.Set{
		resourceapi.ResourceSliceSelectorNodeName: node,
		resourceapi.ResourceSliceSelectorDriver:   nvdra.DriverName,
	}.String()}
}

// DRADeviceClass is one of the chart's DeviceClasses
// (templates/deviceclass-gpu.yaml, deviceclass-mig.yaml): the driver's
// devices of one type.
func DRADeviceClass(name, deviceType string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: "device.driver == '" + nvdra.DriverName + "' && device.attributes['" + nvdra.DriverName + "'].type == '" + deviceType + "'",
		}}}},
	}
}

// DRAKubeletPluginDaemonSet is NVIDIA's DRA kubelet plugin as the chart's
// templates/kubeletplugin.yaml lays it out (its two plugin containers, on
// the chart's image at nvdra.DriverVersion), on the nodes nodeSelector
// selects, tolerating GPU nodes' taint. Only what the simulator reads is
// there: no volumes, probes, RBAC or service account.
func DRAKubeletPluginDaemonSet(namespace string, nodeSelector map[string]string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-component": "kubelet-plugin"}
	image := nvdra.ImageRepository + ":" + nvdra.DriverVersion
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dra-driver-gpu-kubelet-plugin", Namespace: namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: nodeSelector,
					Tolerations:  []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers: []corev1.Container{
						{Name: "compute-domains", Image: image, Command: []string{"bash", "-c"}, Args: []string{"compute-domain-kubelet-plugin -v $(LOG_VERBOSITY)"}},
						{Name: nvdra.KubeletPluginGPUsContainer, Image: image, Command: []string{"bash", "-c"}, Args: []string{"gpu-kubelet-plugin -v $(LOG_VERBOSITY)"}},
					},
				},
			},
		},
	}
}

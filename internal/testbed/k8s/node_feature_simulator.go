package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// The node-feature simulator plays GPU Feature Discovery and Node Feature
// Discovery, which run no code on kwok nodes. A node gets GFD's labels
// (nvidia.com/gpu.product, .count, .memory, ... for its instance type's
// GPUs, see gpuFeatureDiscoveryLabels) only the way a real one does:
//
//   - GFD (a container running gpu-feature-discovery) is Running on it and
//     publishes its labels either as the features file — USE_NODE_FEATURE_API
//     (or GFD_USE_NODE_FEATURE_API) "false", and the pod mounts the host's
//     /etc/kubernetes/node-feature-discovery/features.d, where an nfd-worker
//     Running on the same node that mounts it too reads it — or, GFD's
//     default from v0.15 on, as a NodeFeature object, which needs the API
//     (a service account token);
//   - NFD's NodeFeature CRD is served (a worker cannot publish otherwise);
//   - an nfd-master is Running somewhere in the cluster, with
//     -extra-label-ns naming nvidia.com (NFD denies that namespace
//     otherwise).
//
// An nfd-worker also labels feature.node.kubernetes.io/pci-10de.present=true
// on a node whose instance type has NVIDIA GPUs (the device-plugin chart's
// PCI source config: classes 02 and 03, labeled by vendor), and any node
// with its OS release (system-os_release.ID and VERSION_ID). Like
// nfd-master, the simulator records the labels it wrote in the node's
// nfd.node.kubernetes.io/feature-labels annotation and removes them when
// their source goes (GFD removes its features file when it exits; a
// worker's NodeFeature is owned by its pod), but only while a master runs:
// with no master, labels stay as they are. What it does not reproduce:
// NFD's other feature sources (CPU, kernel, ...), NodeFeatureRules, the
// worker's config file (the PCI labels above are assumed), the labels GFD
// derives from a MIG or sharing config, and the minute GFD and the worker
// sleep between scans (labels change as soon as the pods do).

const (
	gfdCommand             = "gpu-feature-discovery"
	nfdWorkerCommand       = "nfd-worker"
	nfdMasterCommand       = "nfd-master"
	nfdFeaturesDir         = "/etc/kubernetes/node-feature-discovery/features.d"
	nfdFeatureLabelsAnnot  = "nfd.node.kubernetes.io/feature-labels"
	nfdDefaultLabelNS      = "feature.node.kubernetes.io/"
	nfdNodeFeatureGroupVer = "nfd.k8s-sigs.io/v1alpha1"
	nvidiaLabelNS          = "nvidia.com"
)

// nodeFeatureRole is what a pod is to the simulator.
type nodeFeatureRole int

const (
	roleNone nodeFeatureRole = iota
	roleGFD
	roleNFDWorker
	roleNFDMaster
)

// nodeFeatureRoleOf says whether pod runs GFD, an NFD worker or master, by
// its containers' commands (or, for GFD's own image, its entrypoint).
func nodeFeatureRoleOf(pod *corev1.Pod) (nodeFeatureRole, *corev1.Container) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		command := ""
		if len(c.Command) > 0 {
			command = path.Base(c.Command[0])
		} else if strings.Contains(c.Image, "/gpu-feature-discovery:") {
			command = gfdCommand
		}
		switch command {
		case gfdCommand:
			return roleGFD, c
		case nfdWorkerCommand:
			return roleNFDWorker, c
		case nfdMasterCommand:
			return roleNFDMaster, c
		}
	}
	return roleNone, nil
}

func podRunning(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
}

// mountsFeaturesDir reports whether c mounts the host's features.d.
func mountsFeaturesDir(pod *corev1.Pod, c *corev1.Container) bool {
	for _, v := range pod.Spec.Volumes {
		if v.HostPath == nil || filepath.Clean(v.HostPath.Path) != nfdFeaturesDir {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && filepath.Clean(m.MountPath) == nfdFeaturesDir {
				return true
			}
		}
	}
	return false
}

// gfdUsesNodeFeatureAPI is GFD's --use-node-feature-api (default true).
func gfdUsesNodeFeatureAPI(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "USE_NODE_FEATURE_API" || e.Name == "GFD_USE_NODE_FEATURE_API" {
			return e.Value != "false"
		}
	}
	return true
}

func hasAPIToken(pod *corev1.Pod) bool {
	return pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken
}

// masterAllowsNVIDIALabels reports whether nfd-master's arguments allow
// the nvidia.com label namespace.
func masterAllowsNVIDIALabels(c *corev1.Container) bool {
	for _, arg := range append(slices.Clone(c.Command[1:]), c.Args...) {
		value, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "extra-label-ns=")
		if ok && slices.Contains(strings.Split(value, ","), nvidiaLabelNS) {
			return true
		}
	}
	return false
}

// nodeFeatureLabels is what NFD would have labeled node with, given the
// pods on it and whether a master runs (master) allowing nvidia.com
// (nvidiaAllowed); ok is false when no master runs (labels stay).
func (s *devicePluginSimulator) nodeFeatureLabels(ctx context.Context, node *corev1.Node, pods []*corev1.Pod) (labels map[string]string, ok bool, err error) {
	master, nvidiaAllowed := s.runningMaster()
	if !master {
		return nil, false, nil
	}
	served, err := nodeFeatureCRDServed(s.client)
	if err != nil || !served {
		return map[string]string{}, err == nil, err
	}
	var worker *corev1.Pod
	var gfds []*corev1.Pod
	for _, pod := range pods {
		if !podRunning(pod) {
			continue
		}
		switch role, c := nodeFeatureRoleOf(pod); role {
		case roleNFDWorker:
			if mountsFeaturesDir(pod, c) {
				worker = pod
			}
		case roleGFD:
			gfds = append(gfds, pod)
		}
	}
	labels = map[string]string{}
	it, known := ec2catalog.Lookup(node.Labels[corev1.LabelInstanceTypeStable])
	if worker != nil {
		maps.Copy(labels, osReleaseLabels(node.Status.NodeInfo.OSImage))
		if known && it.HasGPU() {
			labels[gpulabels.NFDPCIPresent] = "true"
		}
	}
	for _, pod := range gfds {
		_, c := nodeFeatureRoleOf(pod)
		published := worker != nil && mountsFeaturesDir(pod, c) && !gfdUsesNodeFeatureAPI(c)
		published = published || (gfdUsesNodeFeatureAPI(c) && hasAPIToken(pod))
		if published && nvidiaAllowed && known && it.HasGPU() {
			maps.Copy(labels, gpuFeatureDiscoveryLabels(it))
		}
	}
	return labels, true, nil
}

// osReleaseLabels are the labels NFD's system source writes from the
// host's /etc/os-release, for the OS images the testbed's nodes report.
func osReleaseLabels(osImage string) map[string]string {
	if osImage == "Amazon Linux 2023" {
		return map[string]string{
			nfdDefaultLabelNS + "system-os_release.ID":               "amzn",
			nfdDefaultLabelNS + "system-os_release.VERSION_ID":       "2023",
			nfdDefaultLabelNS + "system-os_release.VERSION_ID.major": "2023",
		}
	}
	return nil
}

// runningMaster reports whether an nfd-master pod is Running, and whether
// one that runs allows nvidia.com labels.
func (s *devicePluginSimulator) runningMaster() (running, nvidiaAllowed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, allows := range s.masters {
		running = true
		nvidiaAllowed = nvidiaAllowed || allows
	}
	return running, nvidiaAllowed
}

// nodeFeatureCRDServed asks discovery whether the API server serves NFD's
// NodeFeature.
func nodeFeatureCRDServed(client kubernetes.Interface) (bool, error) {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(nfdNodeFeatureGroupVer)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", nfdNodeFeatureGroupVer, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "nodefeatures" {
			return true, nil
		}
	}
	return false, nil
}

// reconcileNodeFeatures writes the labels NFD would on node, and removes
// those it wrote before and would no longer, as nfd-master does.
func (s *devicePluginSimulator) reconcileNodeFeatures(ctx context.Context, nodeName string, pods []*corev1.Pod) error {
	if master, _ := s.runningMaster(); !master {
		return nil // no master: nothing relabels the node
	}
	node, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	want, ok, err := s.nodeFeatureLabels(ctx, node, pods)
	if err != nil || !ok {
		return err
	}
	var had []string
	if list := node.Annotations[nfdFeatureLabelsAnnot]; list != "" {
		for _, name := range strings.Split(list, ",") {
			if !strings.Contains(name, "/") {
				name = nfdDefaultLabelNS + name
			}
			had = append(had, name)
		}
	}
	patchLabels := map[string]any{}
	for _, name := range had {
		if _, keep := want[name]; !keep {
			patchLabels[name] = nil
		}
	}
	for name, value := range want {
		if node.Labels[name] != value {
			patchLabels[name] = value
		}
	}
	var names []string
	for name := range want {
		names = append(names, strings.TrimPrefix(name, nfdDefaultLabelNS))
	}
	slices.Sort(names)
	annotation := strings.Join(names, ",")
	if len(patchLabels) == 0 && node.Annotations[nfdFeatureLabelsAnnot] == annotation {
		return nil
	}
	var annotationValue any = annotation
	if annotation == "" {
		annotationValue = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      patchLabels,
		"annotations": map[string]any{nfdFeatureLabelsAnnot: annotationValue},
	}})
	if err != nil {
		return err
	}
	if _, err := s.client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labeling the node as NFD would: %w", err)
	}
	s.log("node %s: NFD labels %d (%d changed)", nodeName, len(want), len(patchLabels))
	return nil
}

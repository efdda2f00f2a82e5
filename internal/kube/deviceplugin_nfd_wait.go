package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// nfdFeatureLabelsAnnotation is where nfd-master lists the labels it wrote
// on a node: present once it has processed the node's NodeFeature.
const nfdFeatureLabelsAnnotation = "nfd.node.kubernetes.io/feature-labels"

// WaitForNodeFeatureDiscovery, for a spec that deploys NFD, waits until
// NFD's worker has rolled out, its master has labeled every node the
// worker runs on, and the plugin's and GFD's DaemonSets have a pod for
// each of those nodes NFD found an NVIDIA PCI device on: the plugin's GPU
// node affinity admits a fresh node only once NFD labeled it, so waiting
// for the plugin's rollout earlier would see no node at all. On timeout
// the error, a NotReadyError, says which nodes are missing what, and the
// master's state.
func (c *Cluster) WaitForNodeFeatureDiscovery(ctx context.Context, spec DevicePluginSpec) error {
	if !spec.DeploysNFD() {
		return nil
	}
	return c.runWait(ctx, "node_feature_discovery", spec.ID(), func(ctx context.Context) error {
		return waitForNodeFeatureDiscovery(ctx, c.client, spec)
	})
}

func waitForNodeFeatureDiscovery(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) error {
	if err := waitForDaemonSetRollout(ctx, client, spec.Namespace, spec.NFDWorkerName()); err != nil {
		return err
	}
	worker, err := client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.NFDWorkerName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading DaemonSet %s/%s: %w", spec.Namespace, spec.NFDWorkerName(), err)
	}
	nodes, err := pluginNodes(ctx, client, worker)
	if err != nil || len(nodes) == 0 {
		return err
	}
	pending, last, err := waitForNodesWhere(ctx, client, nodes, func(node *corev1.Node) bool {
		_, labeled := node.Annotations[nfdFeatureLabelsAnnotation]
		return labeled
	})
	if err != nil {
		if ctx.Err() == nil {
			return err
		}
		diagCtx, cancel := diagnosisContext(ctx)
		defer cancel()
		return notReady("Node Feature Discovery has not labeled %d of the %d nodes its worker runs on (%s): %s",
			len(pending), len(nodes), strings.Join(slices.Sorted(maps.Keys(pending)), ", "), describeNFDMaster(diagCtx, client, spec))
	}
	var want []string // the nodes NFD saw an NVIDIA device on
	for name, node := range last {
		if nodes[name] && (node.Labels[gpulabels.NFDPCIPresent] == "true" || node.Labels[gpulabels.Present] == "true") {
			want = append(want, name)
		}
	}
	return waitForComponentPods(ctx, client, spec, want, ComponentDevicePlugin, ComponentGFD)
}

// waitForComponentPods waits until each component's DaemonSet has a pod
// for every node of nodes (bound to it, or pinned to it by the DaemonSet
// controller and not scheduled yet).
func waitForComponentPods(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec, nodes []string, components ...string) error {
	if len(nodes) == 0 {
		return nil
	}
	has := map[string]map[string]bool{} // component -> nodes with a pod
	byPod := map[string][2]string{}     // pod -> component, node
	missing := func() []string {
		var lines []string
		for _, component := range components {
			for _, node := range nodes {
				if !has[component][node] {
					lines = append(lines, fmt.Sprintf("%s has no pod for node %s", component, node))
				}
			}
		}
		return lines
	}
	selector := labels.SelectorFromSet(labels.Set{LabelInstance: spec.Name}).String()
	podClient := client.CoreV1().Pods(spec.Namespace)
	err := WaitForList(ctx, ListWatchFunctions[*corev1.PodList]{List: podClient.List, Watch: podClient.Watch},
		func(o *metav1.ListOptions) { o.LabelSelector = selector },
		func(pod *corev1.Pod, deleted bool) (bool, error) {
			component := pod.Labels[LabelName]
			if !slices.Contains(components, component) {
				return false, nil
			}
			if prior, ok := byPod[pod.Name]; ok {
				delete(has[prior[0]], prior[1])
				delete(byPod, pod.Name)
			}
			if !deleted && pod.DeletionTimestamp == nil {
				node := podTargetNode(pod)
				if has[component] == nil {
					has[component] = map[string]bool{}
				}
				has[component][node] = true
				byPod[pod.Name] = [2]string{component, node}
			}
			return len(missing()) == 0, nil
		})
	if err != nil && ctx.Err() != nil {
		return notReady("Node Feature Discovery labeled %d nodes as NVIDIA GPU nodes, but not every one has the DaemonSets' pods yet%s",
			len(nodes), diagnosisList(missing()))
	}
	return err
}

// WaitForGFDLabels, for a spec with GPU Feature Discovery, waits until
// every node GFD runs on carries GFD's nvidia.com/gpu.count: GFD writes
// the labels through Node Feature Discovery, so they arrive only where
// NFD runs as GFD needs. On timeout the error, a NotReadyError, names the
// nodes without labels and says whether and how NFD runs.
func (c *Cluster) WaitForGFDLabels(ctx context.Context, spec DevicePluginSpec) error {
	if spec.GFD == nil {
		return nil
	}
	return c.runWait(ctx, "gfd_labels", spec.ID(), func(ctx context.Context) error {
		return waitForGFDLabels(ctx, c.client, spec)
	})
}

func waitForGFDLabels(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) error {
	gfd, err := WaitForObject(ctx, daemonSetLW(client, spec.Namespace), spec.GFDName(), func(ds *appsv1.DaemonSet, exists bool) (bool, error) {
		return exists && ds.Status.ObservedGeneration >= ds.Generation &&
			ds.Status.CurrentNumberScheduled == ds.Status.DesiredNumberScheduled, nil
	})
	if err != nil {
		return err
	}
	nodes, err := pluginNodes(ctx, client, gfd)
	if err != nil || len(nodes) == 0 {
		return err
	}
	pending, _, err := waitForNodesWhere(ctx, client, nodes, func(node *corev1.Node) bool {
		_, labeled := node.Labels[gpulabels.Count]
		return labeled
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	var why string
	if spec.DeploysNFD() {
		why = describeNFDMaster(diagCtx, client, spec)
	} else {
		why = describeForeignNFD(diagCtx, client)
	}
	return notReady("%d of %d nodes running GPU Feature Discovery have none of its labels (%s): GFD writes them into "+
		"/etc/kubernetes/node-feature-discovery/features.d, and only Node Feature Discovery turns them into node labels. %s",
		len(pending), len(nodes), strings.Join(slices.Sorted(maps.Keys(pending)), ", "), why)
}

// describeNFDMaster says how the spec's nfd-master is doing.
func describeNFDMaster(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) string {
	name := spec.Namespace + "/" + spec.NFDMasterName()
	master, err := client.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.NFDMasterName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("reading nfd-master's Deployment %s: %v", name, err)
	}
	if master.Status.ReadyReplicas > 0 {
		return fmt.Sprintf("nfd-master (Deployment %s) is ready; its log says why it labels nothing (e.g. a denied label namespace)", name)
	}
	pods, err := client.CoreV1().Pods(spec.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(spec.selectorLabels(ComponentNFDMaster)).String()})
	if err != nil {
		return fmt.Sprintf("nfd-master (Deployment %s) has no ready pod; listing its pods: %v", name, err)
	}
	var lines []string
	for i := range pods.Items {
		lines = append(lines, describePod(&pods.Items[i]))
	}
	if len(lines) == 0 {
		lines = append(lines, "no pod exists")
	}
	return fmt.Sprintf("nfd-master (Deployment %s) has no ready pod: %s", name, strings.Join(lines, "; "))
}

// describeForeignNFD says whether the cluster runs an NFD of its own.
func describeForeignNFD(ctx context.Context, client kubernetes.Interface) string {
	installed, err := apiResourceServed(client, nfdAPIGroup+"/v1alpha1", "nodefeatures")
	switch {
	case err != nil:
		return "Whether the cluster runs Node Feature Discovery is unknown: " + err.Error()
	case !installed:
		return "The cluster runs no Node Feature Discovery: it serves no " + nfdAPIGroup + "/v1alpha1 NodeFeature (NFD's CRDs are not installed)."
	}
	return "The cluster has Node Feature Discovery's CRDs: its worker must run on these nodes and read that directory, " +
		"and its master must allow the nvidia.com label namespace (-extra-label-ns=nvidia.com)."
}

// NodeFeatureDiscoveryInstalled reports whether the cluster serves Node
// Feature Discovery's NodeFeature API, which every NFD from v0.14 on
// installs: without it, nothing turns GFD's features file into labels.
func (c *Cluster) NodeFeatureDiscoveryInstalled(ctx context.Context) (bool, error) {
	return apiResourceServed(c.client, nfdAPIGroup+"/v1alpha1", "nodefeatures")
}

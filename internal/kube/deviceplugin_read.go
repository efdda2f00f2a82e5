package kube

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// DevicePluginLive is a deployment as the cluster has it: the spec that
// would produce it, and how far it is from ready.
type DevicePluginLive struct {
	Spec DevicePluginSpec
	// ServiceMonitorKnown is false when the cluster has no ServiceMonitor
	// CRD: Spec.DCGM.ServiceMonitor then says nothing.
	ServiceMonitorKnown bool
	// ConfigProblem says why the config file could not be read (the
	// ConfigMap is gone or holds something else); Spec.Config is then
	// empty, which matches no configuration, so the next apply rewrites it.
	ConfigProblem string
	// HealthAgentProblem says why the health agent's DaemonSet could not
	// be read back into Spec.HealthAgent (its arguments are not the
	// agent's); the next apply rewrites it.
	HealthAgentProblem string
	Status             DevicePluginStatus
}

// DevicePluginStatus counts the nodes the plugin runs on and their GPUs.
type DevicePluginStatus struct {
	DesiredNodes int64 // nodes the plugin's DaemonSet wants a pod on
	ReadyNodes   int64 // nodes whose plugin pod is ready
	// AllocatableGPUs sums, over the nodes that run a plugin pod, the
	// allocatable devices the plugin advertises (see CountsAsGPUs).
	AllocatableGPUs int64
}

// ReadDevicePlugin reads the deployment namespace/name; found is false
// when its plugin DaemonSet does not exist. Spec.Owner is the DaemonSet's
// AnnotationOwner; owner decides whether its RuntimeClass is its own.
func (c *Cluster) ReadDevicePlugin(ctx context.Context, namespace, name string, owner Ownership) (DevicePluginLive, bool, error) {
	return found(c.readDevicePlugin(ctx, namespace, name, owner))
}

func (c *Cluster) readDevicePlugin(ctx context.Context, namespace, name string, owner Ownership) (*DevicePluginLive, error) {
	client := c.client
	daemonSets := client.AppsV1().DaemonSets(namespace)
	ds, err := daemonSets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, name, err)
	}
	live := &DevicePluginLive{}
	s := &live.Spec
	s.Namespace, s.Name = namespace, name
	s.Owner = ds.Annotations[AnnotationOwner]
	pod := ds.Spec.Template.Spec
	if c := containerNamed(pod.Containers, pluginContainer); c != nil {
		s.Image, s.ImagePullPolicy, s.Resources = c.Image, c.ImagePullPolicy, c.Resources
	}
	s.NodeSelector = pod.NodeSelector
	s.Tolerations = pod.Tolerations
	s.PriorityClassName = pod.PriorityClassName
	s.GPUNodeAffinity = hasGPUNodeAffinity(pod.Affinity)
	s.UpdateStrategy = string(ds.Spec.UpdateStrategy.Type)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		s.MaxUnavailable = ru.MaxUnavailable
	}
	if pod.RuntimeClassName != nil {
		if s.RuntimeClass, err = readRuntimeClass(ctx, client, *pod.RuntimeClassName, owner); err != nil {
			return nil, err
		}
	}

	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, s.ConfigMapName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live.ConfigProblem = fmt.Sprintf("ConfigMap %s/%s does not exist", namespace, s.ConfigMapName())
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, s.ConfigMapName(), err)
	default:
		if s.Config, err = ParseDevicePluginConfig([]byte(cm.Data[configFileKey])); err != nil {
			s.Config = DevicePluginConfig{}
			live.ConfigProblem = fmt.Sprintf("ConfigMap %s/%s: %v", namespace, s.ConfigMapName(), err)
		}
	}

	if gfd, err := getDaemonSet(ctx, client, namespace, s.GFDName()); err != nil {
		return nil, err
	} else if gfd != nil {
		s.GFD = &GFDSpec{}
		if c := containerNamed(gfd.Spec.Template.Spec.Containers, "gpu-feature-discovery-ctr"); c != nil {
			s.GFD.Image = c.Image
		}
		master, err := client.AppsV1().Deployments(namespace).Get(ctx, s.NFDMasterName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading Deployment %s/%s: %w", namespace, s.NFDMasterName(), err)
		default:
			s.GFD.DeployNFD = master.DeletionTimestamp == nil
		}
	}
	if dcgm, err := getDaemonSet(ctx, client, namespace, s.DCGMName()); err != nil {
		return nil, err
	} else if dcgm != nil {
		s.DCGM = &DCGMSpec{}
		if c := containerNamed(dcgm.Spec.Template.Spec.Containers, "dcgm-exporter"); c != nil {
			s.DCGM.Image = c.Image
			for _, p := range c.Ports {
				if p.Name == dcgmMetricsPort {
					s.DCGM.Port = p.ContainerPort
				}
			}
		}
		if s.DCGM.ServiceMonitor, live.ServiceMonitorKnown, err = serviceMonitorExists(ctx, client, namespace, s.DCGMName()); err != nil {
			return nil, err
		}
	}

	if agent, err := getDaemonSet(ctx, client, namespace, s.HealthAgentName()); err != nil {
		return nil, err
	} else if agent != nil && agent.DeletionTimestamp == nil {
		var problem string
		s.HealthAgent, problem = readHealthAgent(agent.Spec.Template.Spec)
		if problem != "" {
			live.HealthAgentProblem = fmt.Sprintf("DaemonSet %s/%s: %s", namespace, s.HealthAgentName(), problem)
		}
	}

	live.Status, err = devicePluginStatus(ctx, client, ds, s.Config)
	return live, err
}

func readRuntimeClass(ctx context.Context, client kubernetes.Interface, name string, owner Ownership) (*RuntimeClassSpec, error) {
	rc, err := client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &RuntimeClassSpec{Name: name}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading RuntimeClass %s: %w", name, err)
	}
	marker := rc.Annotations[AnnotationOwner]
	return &RuntimeClassSpec{Name: name, Handler: rc.Handler, Create: marker != "" && owner.Owns(marker)}, nil
}

func getDaemonSet(ctx context.Context, client kubernetes.Interface, namespace, name string) (*appsv1.DaemonSet, error) {
	ds, err := client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, name, err)
	}
	return ds, nil
}

func containerNamed(containers []corev1.Container, name string) *corev1.Container {
	i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &containers[i]
}

// hasGPUNodeAffinity reports whether affinity is exactly GPUNodeSelector.
func hasGPUNodeAffinity(affinity *corev1.Affinity) bool {
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	var keys []string
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 0 {
			return false
		}
		e := term.MatchExpressions[0]
		if e.Operator != corev1.NodeSelectorOpIn || !slices.Equal(e.Values, []string{"true"}) {
			return false
		}
		keys = append(keys, e.Key)
	}
	return slices.Equal(keys, []string{gpulabels.Present, gpulabels.NFDPCIPresent})
}

// devicePluginStatus counts ds's nodes and the GPUs the plugin advertises
// on the nodes its pods run on.
func devicePluginStatus(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet, config DevicePluginConfig) (DevicePluginStatus, error) {
	status := DevicePluginStatus{DesiredNodes: int64(ds.Status.DesiredNumberScheduled), ReadyNodes: int64(ds.Status.NumberReady)}
	nodes, err := pluginNodes(ctx, client, ds)
	if err != nil || len(nodes) == 0 {
		return status, err
	}
	// Consistent, not from the watch cache: right after the wait for
	// allocatable GPUs, a cached list could still show none.
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return status, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range list.Items {
		if nodes[list.Items[i].Name] {
			status.AllocatableGPUs += advertisedGPUs(&list.Items[i], config)
		}
	}
	return status, nil
}

// pluginNodes are the nodes that have a pod of ds bound to them.
func pluginNodes(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) (map[string]bool, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	nodes := map[string]bool{}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
			nodes[pod.Spec.NodeName] = true
		}
	}
	return nodes, nil
}

// advertisedGPUs is what node has allocatable of the plugin's resources.
func advertisedGPUs(node *corev1.Node, config DevicePluginConfig) int64 {
	var n int64
	for name, q := range node.Status.Allocatable {
		if config.CountsAsGPUs(string(name)) {
			n += q.Value()
		}
	}
	return n
}

// DevicePluginStatusOf counts the nodes and GPUs of the deployment spec.
func (c *Cluster) DevicePluginStatusOf(ctx context.Context, spec DevicePluginSpec) (DevicePluginStatus, error) {
	client := c.client
	ds, err := client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return DevicePluginStatus{}, fmt.Errorf("reading DaemonSet %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	return devicePluginStatus(ctx, client, ds, spec.Config)
}

// DevicePluginAbsent returns an *ExistsError when the DaemonSet of spec
// exists already (a Helm release, kubectl apply, a lost state), nil when it
// does not: a create never takes another deployment over silently.
func (c *Cluster) DevicePluginAbsent(ctx context.Context, spec DevicePluginSpec) error {
	ds, err := getDaemonSet(ctx, c.client, spec.Namespace, spec.Name)
	switch {
	case err != nil:
		return err
	case ds != nil:
		return &ExistsError{Kind: "DaemonSet", Namespace: spec.Namespace, Name: spec.Name}
	}
	return nil
}

package kube

import (
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// gpu-bootstrap's GPU health agent (`gpu-bootstrap health-agent`, see
// internal/healthagent) runs beside the plugin as a DaemonSet on the same
// nodes: it keeps each node's AcceleratedHardwareReady condition, the
// gpu.gpuinfra.io/unhealthy-gpus annotation and (when asked) a NoSchedule
// taint up to date from NVML, writes an Event per transition, and serves
// dcgm-exporter-compatible /metrics and /healthz on one port. It talks to
// the API server with its own ServiceAccount, bound cluster-wide to
// HealthAgentRules; a Service puts the metrics port in front of the pods.

// HealthAgentSpec deploys the health agent. There is no published image of
// gpu-bootstrap: Image is the user's build.
type HealthAgentSpec struct {
	Image    string
	Settings gpuhealth.Settings
}

// healthAgentContainer is the agent's container in its DaemonSet.
const healthAgentContainer = "health-agent"

// healthAgentMetricsPort names the container and Service port.
const healthAgentMetricsPort = "metrics"

// HealthAgentName names the agent's DaemonSet, ServiceAccount and Service.
func (s DevicePluginSpec) HealthAgentName() string { return s.Name + "-health-agent" }

// healthAgentClusterRoleName names its ClusterRole and binding; cluster
// scoped, so it carries the namespace.
func (s DevicePluginSpec) healthAgentClusterRoleName() string {
	return s.Namespace + ":" + s.HealthAgentName()
}

// Port is the port of Settings.Listen (":9400" gives 9400); 0 when it has none.
func (h HealthAgentSpec) Port() int32 {
	_, port, err := net.SplitHostPort(h.Settings.Listen)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// HealthAgentRules is exactly what the agent does with the API: read and
// patch its node (the condition lives in nodes/status; the annotation and
// the taint on the node), and write core/v1 Events about it.
func HealthAgentRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	rule := func(resource string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
		return rbacv1ac.PolicyRule().WithAPIGroups("").WithResources(resource).WithVerbs(verbs...)
	}
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rule("nodes", "get", "list", "watch", "patch"),
		rule("nodes/status", "patch"),
		rule("events", "create", "patch"),
	}
}

// HealthAgentObjects are the agent's apply configurations, in the order
// they are applied (its DaemonSet is among DevicePluginObjects.DaemonSets).
type HealthAgentObjects struct {
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	Service            *corev1ac.ServiceApplyConfiguration
}

func (s DevicePluginSpec) healthAgentObjects() *HealthAgentObjects {
	if s.HealthAgent == nil {
		return nil
	}
	labels, annotations, name := s.labels(gpuhealth.ComponentHealthAgent), s.ownerAnnotations(), s.HealthAgentName()
	roleName := s.healthAgentClusterRoleName()
	return &HealthAgentObjects{
		ServiceAccount: corev1ac.ServiceAccount(name, s.Namespace).WithLabels(labels).WithAnnotations(annotations),
		ClusterRole: rbacv1ac.ClusterRole(roleName).WithLabels(labels).WithAnnotations(annotations).
			WithRules(HealthAgentRules()...),
		ClusterRoleBinding: rbacv1ac.ClusterRoleBinding(roleName).WithLabels(labels).WithAnnotations(annotations).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(roleName)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(s.Namespace).WithName(name)),
		Service: corev1ac.Service(name, s.Namespace).WithLabels(labels).WithAnnotations(annotations).
			WithSpec(corev1ac.ServiceSpec().
				WithSelector(s.selectorLabels(gpuhealth.ComponentHealthAgent)).
				WithPorts(corev1ac.ServicePort().WithName(healthAgentMetricsPort).WithPort(s.HealthAgent.Port()).
					WithTargetPort(intstr.FromString(healthAgentMetricsPort)).WithProtocol(corev1.ProtocolTCP))),
	}
}

// healthAgentAccess are the agent's objects other than its DaemonSet, as
// managedObjects in the order they are applied (what the pods need
// first); objs nil gives objects to read and delete only.
func (s DevicePluginSpec) healthAgentAccess(client kubernetes.Interface, objs *HealthAgentObjects) []managedObject {
	if objs == nil {
		objs = &HealthAgentObjects{}
	}
	ns, name, roleName := s.Namespace, s.HealthAgentName(), s.healthAgentClusterRoleName()
	return []managedObject{
		serviceAccountObject(client, ns, name, objs.ServiceAccount),
		clusterRoleObject(client, roleName, objs.ClusterRole),
		clusterRoleBindingObject(client, roleName, objs.ClusterRoleBinding),
		serviceObject(client, ns, name, objs.Service),
	}
}

// healthAgentDaemonSet runs `gpu-bootstrap health-agent` on the plugin's
// nodes, with the plugin's RuntimeClass and NVIDIA_VISIBLE_DEVICES=all so
// that the NVIDIA container runtime injects the driver's NVML and every
// GPU; its own ServiceAccount (it patches its node); ready once /healthz
// answers.
func (s DevicePluginSpec) healthAgentDaemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	port := s.HealthAgent.Port()
	c := corev1ac.Container().WithName(healthAgentContainer).WithImage(s.HealthAgent.Image).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("gpu-bootstrap").
		WithArgs(s.HealthAgent.Settings.Args()...).
		WithEnv(nodeNameEnv(), envVar("NVIDIA_VISIBLE_DEVICES", "all"), envVar("NVIDIA_DRIVER_CAPABILITIES", "utility")).
		WithPorts(corev1ac.ContainerPort().WithName(healthAgentMetricsPort).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(healthAgentMetricsPort))).
			WithPeriodSeconds(10)).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	ds := s.daemonSet(s.HealthAgentName(), gpuhealth.ComponentHealthAgent, nil, s.NodeSelector, c)
	pod := ds.Spec.Template.Spec
	pod.AutomountServiceAccountToken = nil // in-cluster credentials
	pod.WithServiceAccountName(s.HealthAgentName())
	// The agent's own taint must not keep a replaced agent pod off the
	// node: only that pod can take the taint away again.
	pod.WithTolerations(corev1ac.Toleration().WithKey(gpuhealth.TaintKey).WithOperator(corev1.TolerationOpExists).
		WithEffect(corev1.TaintEffectNoSchedule))
	return ds
}

// readHealthAgent is the HealthAgentSpec its DaemonSet's container runs;
// problem says why its arguments could not be read (Settings is then the
// zero value, which matches no configuration, so the next apply rewrites
// them).
func readHealthAgent(pod corev1.PodSpec) (spec *HealthAgentSpec, problem string) {
	spec = &HealthAgentSpec{}
	c := containerNamed(pod.Containers, healthAgentContainer)
	if c == nil {
		return spec, fmt.Sprintf("it has no container %q", healthAgentContainer)
	}
	spec.Image = c.Image
	settings, err := gpuhealth.ParseArgs(c.Args)
	if err != nil {
		return spec, fmt.Sprintf("its arguments %q: %v", c.Args, err)
	}
	spec.Settings = settings
	return spec, ""
}

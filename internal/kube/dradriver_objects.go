package kube

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// DRADriverObjects are the apply configurations of one DRA driver
// deployment, in the order they are applied: the kubelet plugin's
// identity and rights before the DaemonSet that uses them, the
// DeviceClasses last.
type DRADriverObjects struct {
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	Role               *rbacv1ac.RoleApplyConfiguration
	RoleBinding        *rbacv1ac.RoleBindingApplyConfiguration
	DaemonSet          *appsv1ac.DaemonSetApplyConfiguration
	DeviceClasses      []*resourcev1ac.DeviceClassApplyConfiguration
}

// BuildDRADriverObjects renders spec as the chart's templates do
// (rbac-kubeletplugin.yaml, kubeletplugin.yaml with only the gpus
// container, deviceclass-*.yaml). It contacts nothing.
func BuildDRADriverObjects(s DRADriverSpec) DRADriverObjects {
	owner := withOwner(nil, s.Owner)
	objs := DRADriverObjects{
		ServiceAccount: corev1ac.ServiceAccount(s.ServiceAccountName(), s.Namespace).WithLabels(s.labels()).WithAnnotations(owner),
		ClusterRole: rbacv1ac.ClusterRole(s.ClusterRoleName()).WithLabels(s.clusterLabels()).WithAnnotations(owner).
			WithRules(draKubeletPluginClusterRules()...),
		ClusterRoleBinding: rbacv1ac.ClusterRoleBinding(s.ClusterRoleBindingName()).WithLabels(s.clusterLabels()).WithAnnotations(owner).
			WithSubjects(s.serviceAccountSubject()).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(s.ClusterRoleName())),
		Role: rbacv1ac.Role(s.RoleName(), s.Namespace).WithLabels(s.labels()).WithAnnotations(owner),
		RoleBinding: rbacv1ac.RoleBinding(s.RoleBindingName(), s.Namespace).WithLabels(s.labels()).WithAnnotations(owner).
			WithSubjects(s.serviceAccountSubject()).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(s.RoleName())),
		DaemonSet: s.kubeletPluginDaemonSet(),
	}
	if s.FeatureGateEnabled("MPSSupport") {
		// The plugin runs an MPS control daemon per claim as a Deployment
		// in its namespace.
		objs.Role.WithRules(rbacv1ac.PolicyRule().WithAPIGroups("apps").WithResources("deployments").
			WithVerbs("get", "list", "watch", "create", "update", "patch", "delete"))
	}
	for _, class := range s.DeviceClasses {
		objs.DeviceClasses = append(objs.DeviceClasses, s.deviceClass(class))
	}
	return objs
}

// draKubeletPluginClusterRules are the chart's ClusterRole of the kubelet
// plugin.
func draKubeletPluginClusterRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	rule := func(group, resource string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
		return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resource).WithVerbs(verbs...)
	}
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rule("resource.nvidia.com", "computedomains", "get", "list", "watch"),
		rule("resource.k8s.io", "resourceclaims", "get", "list", "watch"),
		rule("resource.k8s.io", "resourceslices", "get", "list", "watch", "create", "update", "delete"),
		rule("", "nodes", "get", "list", "watch", "update"),
		rule("", "pods", "get", "list", "watch"),
	}
}

func (s DRADriverSpec) serviceAccountSubject() *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind("ServiceAccount").WithName(s.ServiceAccountName()).WithNamespace(s.Namespace)
}

// deviceClassSelector is the CEL selector of one of the chart's DeviceClasses.
func deviceClassSelector(class string) string {
	return "device.driver == '" + nvdra.DriverName + "' && device.attributes['" + nvdra.DriverName + "'].type == '" + draDeviceClassType[class] + "'"
}

func (s DRADriverSpec) deviceClass(class string) *resourcev1ac.DeviceClassApplyConfiguration {
	spec := resourcev1ac.DeviceClassSpec().WithSelectors(resourcev1ac.DeviceSelector().
		WithCEL(resourcev1ac.CELDeviceSelector().WithExpression(deviceClassSelector(class))))
	if class == nvdra.DeviceClassGPU && s.ExtendedResourceName != "" {
		spec.WithExtendedResourceName(s.ExtendedResourceName)
	}
	return resourcev1ac.DeviceClass(class).WithLabels(s.clusterLabels()).WithAnnotations(withOwner(nil, s.Owner)).WithSpec(spec)
}

// draGPUNodeSelector is the chart's kubeletPlugin.affinity: nodes with an
// NVIDIA PCI device or CPU (NFD's labels), or labeled GPU nodes. Its terms
// are ORed.
func draGPUNodeSelector() *corev1ac.NodeSelectorApplyConfiguration {
	term := func(key, value string) *corev1ac.NodeSelectorTermApplyConfiguration {
		return corev1ac.NodeSelectorTerm().WithMatchExpressions(corev1ac.NodeSelectorRequirement().
			WithKey(key).WithOperator(corev1.NodeSelectorOpIn).WithValues(value))
	}
	return corev1ac.NodeSelector().WithNodeSelectorTerms(
		term(gpulabels.NFDPCIPresent, "true"), term(draNFDCPUVendorLabel, draNFDCPUVendorNVIDIA), term(gpulabels.Present, "true"))
}

// draDriverRootParent is the chart's driver-root-parent host path.
func draDriverRootParent(root string) string {
	if root == "/" {
		return "/"
	}
	return path.Dir(strings.TrimSuffix(root, "/"))
}

// draGPUsScript is the gpus container's command, as the chart writes it.
const draGPUsScript = `# Conditionally mask the params file to prevent this container from
# recreating any missing GPU device nodes. This is necessary, for
# example, when running under nvkind to limit the set GPUs governed
# by the plugin even though it has cgroup access to all of them.
if [ "${MASK_NVIDIA_DRIVER_PARAMS}" = "true" ]; then
  cp /proc/driver/nvidia/params root/gpu-params
  sed -i 's/^ModifyDeviceFiles: 1$/ModifyDeviceFiles: 0/' root/gpu-params
  mount --bind root/gpu-params /proc/driver/nvidia/params
fi
gpu-kubelet-plugin -v $(LOG_VERBOSITY)`

func (s DRADriverSpec) kubeletPluginDaemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	hostToContainer := corev1.MountPropagationHostToContainer
	rootParent := mount("driver-root-parent", "/driver-root-parent")
	if s.DriverRoot == "/" {
		rootParent.WithReadOnly(true)
	} else {
		rootParent.WithMountPropagation(hostToContainer)
	}
	dirs := []*corev1ac.EnvVarApplyConfiguration{
		envVar("KUBELET_REGISTRAR_DIRECTORY_PATH", draRegistrarDir), envVar("KUBELET_PLUGINS_DIRECTORY_PATH", draPluginsDir),
	}
	init := corev1ac.Container().WithName(draInitContainer).WithImage(s.Image).
		WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true)).
		WithCommand("bash", "/usr/bin/kubelet-plugin-prestart.sh").
		WithEnv(envVar(draEnvDriverRoot, s.DriverRoot), envVar("NVIDIA_VISIBLE_DEVICES", "void")).WithEnv(dirs...).
		WithVolumeMounts(rootParent)

	probe := func(failures int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithGRPC(corev1ac.GRPCAction().WithPort(draGPUsHealthcheckPort).WithService("liveness")).
			WithFailureThreshold(failures).WithPeriodSeconds(10).WithTimeoutSeconds(10)
	}
	gpus := corev1ac.Container().WithName(draGPUsContainer).WithImage(s.Image).WithImagePullPolicy(s.ImagePullPolicy).
		WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true)).
		WithCommand("bash", "-c").WithArgs(draGPUsScript).
		WithStartupProbe(probe(60)).WithLivenessProbe(probe(3)).
		WithEnv(envVar(draEnvLogVerbosity, strconv.Itoa(s.LogVerbosity)), envVar("MASK_NVIDIA_DRIVER_PARAMS", "false"),
			envVar(draEnvDriverRoot, s.DriverRoot), envVar("NVIDIA_VISIBLE_DEVICES", "void"), envVar("CDI_ROOT", cdiDir),
			envVar("NVIDIA_MIG_CONFIG_DEVICES", "all"), nodeNameEnv(),
			corev1ac.EnvVar().WithName("NAMESPACE").WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.namespace"))),
			envVar("IMAGE_NAME", s.Image))
	if gates := featureGatesValue(s.FeatureGates); gates != "" {
		gpus.WithEnv(envVar(draEnvFeatureGates, gates))
	}
	gpus.WithEnv(dirs...).WithEnv(envVar("HEALTHCHECK_PORT", strconv.Itoa(draGPUsHealthcheckPort))).
		WithVolumeMounts(mount("plugins-registry", draRegistrarDir),
			mount("plugins", draPluginsDir).WithMountPropagation(corev1.MountPropagationBidirectional),
			mount("cdi", cdiDir),
			mount("driver-root", "/driver-root").WithReadOnly(true).WithMountPropagation(hostToContainer))

	pod := corev1ac.PodSpec().
		WithServiceAccountName(s.ServiceAccountName()).
		WithInitContainers(init).
		WithContainers(gpus).
		WithVolumes(hostPathVolume("plugins-registry", draRegistrarDir, ""), hostPathVolume("plugins", draPluginsDir, ""),
			hostPathVolume("cdi", cdiDir, ""),
			hostPathVolume("driver-root-parent", draDriverRootParent(s.DriverRoot), hostPathDirOrCreat),
			hostPathVolume("driver-root", s.DriverRoot, hostPathDirOrCreat))
	if len(s.NodeSelector) > 0 {
		pod.WithNodeSelector(s.NodeSelector)
	}
	for _, t := range s.Tolerations {
		pod.WithTolerations(tolerationApply(t))
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	if s.GPUNodeAffinity {
		pod.WithAffinity(corev1ac.Affinity().WithNodeAffinity(corev1ac.NodeAffinity().
			WithRequiredDuringSchedulingIgnoredDuringExecution(draGPUNodeSelector())))
	}
	return appsv1ac.DaemonSet(s.DaemonSetName(), s.Namespace).
		WithLabels(s.labels()).
		WithAnnotations(withOwner(nil, s.Owner)).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(s.selectorLabels())).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().WithType("RollingUpdate").
				WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().WithMaxUnavailable(intstr.FromString(draDefaultMaxUnavailable)))).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(s.labels()).WithSpec(pod)))
}

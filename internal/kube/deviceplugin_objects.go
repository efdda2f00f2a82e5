package kube

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	nodev1ac "k8s.io/client-go/applyconfigurations/node/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// Where the containers find things, as NVIDIA's Helm chart lays them out.
const (
	configVolume       = "config"
	configMountPath    = "/config"
	configFileKey      = "config.yaml"
	devicePluginsDir   = "/var/lib/kubelet/device-plugins"
	podResourcesDir    = "/var/lib/kubelet/pod-resources"
	cdiDir             = "/var/run/cdi"
	mpsRootHostPath    = "/run/nvidia/mps"
	nfdFeaturesDir     = "/etc/kubernetes/node-feature-discovery/features.d"
	pluginContainer    = "nvidia-device-plugin-ctr"
	dcgmMetricsPort    = "metrics"
	hostPathDir        = corev1.HostPathDirectory
	hostPathDirOrCreat = corev1.HostPathDirectoryOrCreate
)

// DevicePluginObjects are the apply configurations of one deployment, in
// the order they are applied.
type DevicePluginObjects struct {
	RuntimeClass *nodev1ac.RuntimeClassApplyConfiguration // nil unless the spec creates one
	ConfigMap    *corev1ac.ConfigMapApplyConfiguration
	DaemonSets   []*appsv1ac.DaemonSetApplyConfiguration // the plugin's first
	Service      *corev1ac.ServiceApplyConfiguration     // the DCGM exporter's, or nil
	HealthAgent  *HealthAgentObjects                     // the health agent's access and Service, or nil
	ConfigHash   string
}

// BuildDevicePluginObjects renders spec into apply configurations. It
// contacts nothing.
func BuildDevicePluginObjects(s DevicePluginSpec) (DevicePluginObjects, error) {
	rendered, err := s.Config.Render()
	if err != nil {
		return DevicePluginObjects{}, err
	}
	objs := DevicePluginObjects{ConfigHash: ConfigHash(rendered)}
	if s.RuntimeClass != nil && s.RuntimeClass.Create {
		objs.RuntimeClass = nodev1ac.RuntimeClass(s.RuntimeClass.Name).
			WithLabels(s.labels(ComponentDevicePlugin)).
			WithAnnotations(s.ownerAnnotations()).
			WithHandler(s.RuntimeClass.Handler)
	}
	objs.ConfigMap = corev1ac.ConfigMap(s.ConfigMapName(), s.Namespace).
		WithLabels(s.labels(ComponentDevicePlugin)).
		WithAnnotations(s.ownerAnnotations()).
		WithData(map[string]string{configFileKey: string(rendered)})

	objs.DaemonSets = append(objs.DaemonSets, s.pluginDaemonSet(objs.ConfigHash))
	if s.Config.MPS != nil {
		objs.DaemonSets = append(objs.DaemonSets, s.mpsDaemonSet(objs.ConfigHash))
	}
	if s.GFD != nil {
		objs.DaemonSets = append(objs.DaemonSets, s.gfdDaemonSet(objs.ConfigHash))
	}
	if s.DCGM != nil {
		objs.DaemonSets = append(objs.DaemonSets, s.dcgmDaemonSet())
		objs.Service = corev1ac.Service(s.DCGMName(), s.Namespace).
			WithLabels(s.labels(ComponentDCGM)).
			WithAnnotations(s.ownerAnnotations()).
			WithSpec(corev1ac.ServiceSpec().
				WithSelector(s.selectorLabels(ComponentDCGM)).
				WithPorts(corev1ac.ServicePort().WithName(dcgmMetricsPort).WithPort(s.DCGM.Port).
					WithTargetPort(intstr.FromString(dcgmMetricsPort)).WithProtocol(corev1.ProtocolTCP)))
	}
	if s.HealthAgent != nil {
		objs.DaemonSets = append(objs.DaemonSets, s.healthAgentDaemonSet())
		objs.HealthAgent = s.healthAgentObjects()
	}
	return objs, nil
}

// daemonSet is the shape every component shares: selector, update
// strategy, scheduling (tolerations, node selector, GPU node affinity,
// priority, runtime class) and one main container.
func (s DevicePluginSpec) daemonSet(name, component string, podAnnotations map[string]string, nodeSelector map[string]string, main *corev1ac.ContainerApplyConfiguration) *appsv1ac.DaemonSetApplyConfiguration {
	strategy := appsv1ac.DaemonSetUpdateStrategy().WithType(appsV1StrategyType(s.UpdateStrategy))
	if s.UpdateStrategy != "OnDelete" && s.MaxUnavailable != nil {
		strategy.WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().WithMaxUnavailable(*s.MaxUnavailable))
	}
	pod := corev1ac.PodSpec().
		WithContainers(main).
		WithAutomountServiceAccountToken(false).
		WithNodeSelector(nodeSelector)
	for _, t := range s.Tolerations {
		pod.WithTolerations(tolerationApply(t))
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	if s.RuntimeClass != nil {
		pod.WithRuntimeClassName(s.RuntimeClass.Name)
	}
	if s.GPUNodeAffinity {
		pod.WithAffinity(corev1ac.Affinity().WithNodeAffinity(corev1ac.NodeAffinity().
			WithRequiredDuringSchedulingIgnoredDuringExecution(GPUNodeSelector())))
	}
	template := corev1ac.PodTemplateSpec().WithLabels(s.labels(component)).WithSpec(pod)
	if len(podAnnotations) > 0 {
		template.WithAnnotations(podAnnotations)
	}
	return appsv1ac.DaemonSet(name, s.Namespace).
		WithLabels(s.labels(component)).
		WithAnnotations(s.ownerAnnotations()).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(s.selectorLabels(component))).
			WithUpdateStrategy(strategy).
			WithTemplate(template))
}

// ownerAnnotations mark an object as the spec's owner's (see Ownership):
// on the objects themselves, never on pod templates, whose change would
// roll the pods.
func (s DevicePluginSpec) ownerAnnotations() map[string]string {
	return withOwner(nil, s.Owner)
}

// GPUNodeSelector is the default node affinity: nodes that Node Feature
// Discovery saw an NVIDIA PCI device on, or that are labeled GPU nodes.
// Its terms are ORed.
func GPUNodeSelector() *corev1ac.NodeSelectorApplyConfiguration {
	term := func(key string) *corev1ac.NodeSelectorTermApplyConfiguration {
		return corev1ac.NodeSelectorTerm().WithMatchExpressions(corev1ac.NodeSelectorRequirement().
			WithKey(key).WithOperator(corev1.NodeSelectorOpIn).WithValues("true"))
	}
	return corev1ac.NodeSelector().WithNodeSelectorTerms(term(gpulabels.Present), term(gpulabels.NFDPCIPresent))
}

func (s DevicePluginSpec) pluginDaemonSet(configHash string) *appsv1ac.DaemonSetApplyConfiguration {
	c := corev1ac.Container().WithName(pluginContainer).WithImage(s.Image).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("nvidia-device-plugin").
		WithEnv(envVar("CONFIG_FILE", configMountPath+"/"+configFileKey),
			envVar("NVIDIA_VISIBLE_DEVICES", "all"), envVar("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")).
		WithSecurityContext(s.pluginSecurityContext()).
		WithVolumeMounts(mount("device-plugins", devicePluginsDir), mount(configVolume, configMountPath).WithReadOnly(true))
	volumes := []*corev1ac.VolumeApplyConfiguration{hostPathVolume("device-plugins", devicePluginsDir, hostPathDir), s.configVolume()}
	if slices.ContainsFunc(s.Config.DeviceListStrategy, func(st string) bool { return st == "cdi-annotations" || st == "cdi-cri" }) {
		c.WithVolumeMounts(mount("cdi-root", cdiDir))
		volumes = append(volumes, hostPathVolume("cdi-root", cdiDir, hostPathDirOrCreat))
	}
	if s.Config.MPS != nil {
		c.WithEnv(envVar("MPS_ROOT", mpsRootHostPath)).WithVolumeMounts(mount("mps-root", "/mps"), mount("mps-shm", "/dev/shm"))
		volumes = append(volumes, hostPathVolume("mps-root", mpsRootHostPath, hostPathDirOrCreat), hostPathVolume("mps-shm", mpsRootHostPath+"/shm", ""))
	}
	if len(s.Resources.Requests) > 0 || len(s.Resources.Limits) > 0 {
		c.WithResources(corev1ac.ResourceRequirements().WithRequests(s.Resources.Requests).WithLimits(s.Resources.Limits))
	}
	ds := s.daemonSet(s.Name, ComponentDevicePlugin, map[string]string{AnnotationConfigHash: configHash}, s.NodeSelector, c)
	ds.Spec.Template.Spec.WithVolumes(volumes...)
	return ds
}

// pluginSecurityContext follows NVIDIA's Helm chart: privileged to pass
// device specs, CAP_SYS_ADMIN for MIG or volume-mounts, otherwise nothing.
func (s DevicePluginSpec) pluginSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	switch {
	case s.Config.PassDeviceSpecs:
		return corev1ac.SecurityContext().WithPrivileged(true)
	case s.needsSysAdmin():
		return corev1ac.SecurityContext().WithCapabilities(corev1ac.Capabilities().WithAdd("SYS_ADMIN"))
	default:
		return corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	}
}

func (s DevicePluginSpec) needsSysAdmin() bool {
	return s.Config.MIGStrategy != "none" || slices.Contains(s.Config.DeviceListStrategy, "volume-mounts")
}

func (s DevicePluginSpec) gfdDaemonSet(configHash string) *appsv1ac.DaemonSetApplyConfiguration {
	security := corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	if s.needsSysAdmin() {
		security = corev1ac.SecurityContext().WithCapabilities(corev1ac.Capabilities().WithAdd("SYS_ADMIN"))
	}
	c := corev1ac.Container().WithName("gpu-feature-discovery-ctr").WithImage(s.GFDImage()).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("gpu-feature-discovery").
		// The features file, not the NodeFeature API (GFD's default from
		// v0.15 on): it needs no API access, and every NFD reads it.
		WithEnv(envVar("CONFIG_FILE", configMountPath+"/"+configFileKey), nodeNameEnv(), envVar("USE_NODE_FEATURE_API", "false")).
		WithSecurityContext(security).
		WithVolumeMounts(mount("output-dir", nfdFeaturesDir), mount("host-sys", "/sys"), mount(configVolume, configMountPath).WithReadOnly(true))
	ds := s.daemonSet(s.GFDName(), ComponentGFD, map[string]string{AnnotationConfigHash: configHash}, s.NodeSelector, c)
	ds.Spec.Template.Spec.WithVolumes(hostPathVolume("output-dir", nfdFeaturesDir, hostPathDirOrCreat), hostPathVolume("host-sys", "/sys", hostPathDir), s.configVolume())
	return ds
}

// mpsDaemonSet runs the MPS control daemon that MPS sharing needs, on the
// nodes GFD labels nvidia.com/mps.capable=true.
func (s DevicePluginSpec) mpsDaemonSet(configHash string) *appsv1ac.DaemonSetApplyConfiguration {
	nodeSelector := map[string]string{gpulabels.MPSCapable: "true"}
	for k, v := range s.NodeSelector {
		nodeSelector[k] = v
	}
	c := corev1ac.Container().WithName("mps-control-daemon-ctr").WithImage(s.Image).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("mps-control-daemon").
		WithEnv(envVar("CONFIG_FILE", configMountPath+"/"+configFileKey), nodeNameEnv(),
			envVar("NVIDIA_VISIBLE_DEVICES", "all"), envVar("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")).
		WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true)).
		WithVolumeMounts(mount("mps-root", "/mps"), mount("mps-shm", "/dev/shm"), mount(configVolume, configMountPath).WithReadOnly(true))
	ds := s.daemonSet(s.MPSName(), ComponentMPS, map[string]string{AnnotationConfigHash: configHash}, nodeSelector, c)
	bidirectional := corev1.MountPropagationBidirectional
	ds.Spec.Template.Spec.
		WithInitContainers(corev1ac.Container().WithName("mps-control-daemon-mounts").WithImage(s.Image).WithImagePullPolicy(s.ImagePullPolicy).
			WithCommand("mps-control-daemon", "mount-shm").
			WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true)).
			WithVolumeMounts(mount("mps-root", "/mps").WithMountPropagation(bidirectional))).
		WithVolumes(hostPathVolume("mps-root", mpsRootHostPath, hostPathDirOrCreat), hostPathVolume("mps-shm", mpsRootHostPath+"/shm", ""), s.configVolume())
	return ds
}

func (s DevicePluginSpec) dcgmDaemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	c := corev1ac.Container().WithName("dcgm-exporter").WithImage(s.DCGM.Image).WithImagePullPolicy(s.ImagePullPolicy).
		WithEnv(envVar("DCGM_EXPORTER_LISTEN", fmt.Sprintf(":%d", s.DCGM.Port)), envVar("DCGM_EXPORTER_KUBERNETES", "true"), nodeNameEnv()).
		WithPorts(corev1ac.ContainerPort().WithName(dcgmMetricsPort).WithContainerPort(s.DCGM.Port).WithProtocol(corev1.ProtocolTCP)).
		WithSecurityContext(corev1ac.SecurityContext().WithRunAsNonRoot(false).WithRunAsUser(0).
			WithCapabilities(corev1ac.Capabilities().WithAdd("SYS_ADMIN").WithDrop("ALL"))).
		WithVolumeMounts(mount("pod-gpu-resources", podResourcesDir).WithReadOnly(true))
	ds := s.daemonSet(s.DCGMName(), ComponentDCGM, nil, s.NodeSelector, c)
	ds.Spec.Template.Spec.WithVolumes(hostPathVolume("pod-gpu-resources", podResourcesDir, ""))
	return ds
}

func (s DevicePluginSpec) configVolume() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(configVolume).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(s.ConfigMapName()))
}

func hostPathVolume(name, path string, kind corev1.HostPathType) *corev1ac.VolumeApplyConfiguration {
	source := corev1ac.HostPathVolumeSource().WithPath(path)
	if kind != "" {
		source.WithType(kind)
	}
	return corev1ac.Volume().WithName(name).WithHostPath(source)
}

func mount(name, path string) *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(name).WithMountPath(path)
}

func envVar(name, value string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValue(value)
}

func nodeNameEnv() *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName("NODE_NAME").
		WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName")))
}

func tolerationApply(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	ac := corev1ac.Toleration()
	if t.Key != "" {
		ac.WithKey(t.Key)
	}
	if t.Operator != "" {
		ac.WithOperator(t.Operator)
	}
	if t.Value != "" {
		ac.WithValue(t.Value)
	}
	if t.Effect != "" {
		ac.WithEffect(t.Effect)
	}
	if t.TolerationSeconds != nil {
		ac.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return ac
}

func appsV1StrategyType(s string) appsv1.DaemonSetUpdateStrategyType {
	if s == string(appsv1.OnDeleteDaemonSetStrategyType) {
		return appsv1.OnDeleteDaemonSetStrategyType
	}
	return appsv1.RollingUpdateDaemonSetStrategyType
}

package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults of gpu_device_plugin: NVIDIA's current releases.
const (
	DefaultDevicePluginImage  = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
	DefaultDCGMExporterImage  = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"
	DefaultDCGMExporterPort   = 9400
	DefaultRuntimeClassName   = "nvidia"
	DefaultDevicePluginPrio   = "system-node-critical"
	DefaultDevicePluginName   = "nvidia-device-plugin"
	DefaultDevicePluginNSName = "nvidia-device-plugin"
)

// Labels and annotations on every object a DevicePluginSpec makes.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelPartOf    = "app.kubernetes.io/part-of"

	// AnnotationConfigHash in the plugin's pod template changes with the
	// config file, so that a config change rolls the pods.
	AnnotationConfigHash = "gpu.gpuinfra.io/config-hash"
)

// The components of a device plugin deployment, as app.kubernetes.io/name.
const (
	ComponentDevicePlugin = "nvidia-device-plugin"
	ComponentGFD          = "gpu-feature-discovery"
	ComponentDCGM         = "dcgm-exporter"
	ComponentMPS          = "mps-control-daemon"
)

// DevicePluginSpec is everything gpu_device_plugin deploys, before any
// Kubernetes object is built from it.
type DevicePluginSpec struct {
	Namespace, Name   string
	Image             string
	ImagePullPolicy   corev1.PullPolicy
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	PriorityClassName string
	// GPUNodeAffinity restricts the pods to nodes labeled
	// nvidia.com/gpu.present=true or feature.node.kubernetes.io/pci-10de.present=true.
	GPUNodeAffinity bool
	Resources       corev1.ResourceRequirements
	UpdateStrategy  string              // RollingUpdate or OnDelete
	MaxUnavailable  *intstr.IntOrString // RollingUpdate only
	RuntimeClass    *RuntimeClassSpec   // nil: the pods use the cluster's default runtime
	Config          DevicePluginConfig

	GFD  *GFDSpec  // nil: no GPU Feature Discovery
	DCGM *DCGMSpec // nil: no DCGM exporter
	// HealthAgent deploys gpu-bootstrap's GPU health agent (see
	// deviceplugin_health_agent.go); nil: none.
	HealthAgent *HealthAgentSpec

	// Owner is written into AnnotationOwner on every object (see
	// Ownership); empty writes none.
	Owner string
}

// RuntimeClassSpec is the RuntimeClass the pods run with; Create makes
// the provider own it.
type RuntimeClassSpec struct {
	Create  bool
	Name    string
	Handler string
}

// GFDSpec deploys GPU Feature Discovery; an empty Image means the plugin's.
// GFD writes its labels into Node Feature Discovery's features.d on each
// node: DeployNFD deploys NFD's worker and master beside it (see
// deviceplugin_nfd.go); without it, an NFD the cluster runs already must
// read that directory.
type GFDSpec struct {
	Image     string
	DeployNFD bool
}

// DCGMSpec deploys NVIDIA's DCGM exporter and a Service in front of it.
type DCGMSpec struct {
	Image string
	Port  int32
	// ServiceMonitor asks for a Prometheus Operator ServiceMonitor, made
	// only when its CRD is installed.
	ServiceMonitor bool
}

// Object names, all derived from Name.
func (s DevicePluginSpec) ConfigMapName() string { return s.Name + "-config" }
func (s DevicePluginSpec) GFDName() string       { return s.Name + "-gfd" }
func (s DevicePluginSpec) DCGMName() string      { return s.Name + "-dcgm-exporter" }
func (s DevicePluginSpec) MPSName() string       { return s.Name + "-mps-control-daemon" }

// ID is namespace/name, the resource's Terraform ID.
func (s DevicePluginSpec) ID() string { return s.Namespace + "/" + s.Name }

// GFDImage is the image GPU Feature Discovery runs: its own, or the
// plugin's (the k8s-device-plugin image ships both).
func (s DevicePluginSpec) GFDImage() string {
	if s.GFD != nil && s.GFD.Image != "" {
		return s.GFD.Image
	}
	return s.Image
}

// DaemonSetNames are the DaemonSets the spec deploys, the plugin's first.
func (s DevicePluginSpec) DaemonSetNames() []string {
	names := []string{s.Name}
	if s.Config.MPS != nil {
		names = append(names, s.MPSName())
	}
	if s.GFD != nil {
		names = append(names, s.GFDName())
	}
	if s.DeploysNFD() {
		names = append(names, s.NFDWorkerName())
	}
	if s.DCGM != nil {
		names = append(names, s.DCGMName())
	}
	if s.HealthAgent != nil {
		names = append(names, s.HealthAgentName())
	}
	return names
}

// selectorLabels select one component's pods of this deployment.
func (s DevicePluginSpec) selectorLabels(component string) map[string]string {
	return map[string]string{LabelName: component, LabelInstance: s.Name}
}

func (s DevicePluginSpec) labels(component string) map[string]string {
	l := s.selectorLabels(component)
	l[LabelManagedBy] = FieldManager
	l[LabelPartOf] = "nvidia-gpu"
	return l
}

package kube

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// This file owns what gpu_dra_driver deploys: NVIDIA's DRA driver for GPUs
// as its Helm chart (deployments/helm/nvidia-dra-driver-gpu at
// nvdra.DriverVersion) lays out the GPU half of it: the kubelet plugin's
// DaemonSet with its ServiceAccount and RBAC, and the DeviceClasses. The
// ComputeDomain half (its controller, CRD and the compute-domains
// container) is not deployed.

// Defaults of gpu_dra_driver: the chart's values.yaml.
const (
	DefaultDRADriverImage        = nvdra.ImageRepository + ":" + nvdra.DriverVersion
	DefaultDRADriverName         = "nvidia-dra-driver-gpu"
	DefaultDRADriverNamespace    = "nvidia-dra-driver-gpu"
	DefaultDRADriverRoot         = "/"
	DefaultDRADriverLogVerbosity = 4
	DefaultDRADriverPriority     = "system-node-critical"
)

// The chart's fixed names and paths (templates/kubeletplugin.yaml,
// values.yaml kubeletPlugin.*).
const (
	draChartName             = "nvidia-dra-driver-gpu"
	draComponentLabel        = draChartName + "-component" // the chart's selector label
	draComponentKubelet      = "kubelet-plugin"
	draGPUsContainer         = "gpus"
	draInitContainer         = "init-container"
	draRegistrarDir          = "/var/lib/kubelet/plugins_registry"
	draPluginsDir            = "/var/lib/kubelet/plugins"
	draGPUsHealthcheckPort   = 51516
	draEnvDriverRoot         = "NVIDIA_DRIVER_ROOT"
	draEnvLogVerbosity       = "LOG_VERBOSITY"
	draEnvFeatureGates       = "FEATURE_GATES"
	draNFDCPUVendorLabel     = "feature.node.kubernetes.io/cpu-model.vendor_id" // NFD's, on Tegra systems
	draNFDCPUVendorNVIDIA    = "NVIDIA"
	draDefaultMaxUnavailable = "100%"
)

// DRADeviceClasses are the DeviceClasses the chart creates, in its order.
var DRADeviceClasses = []string{nvdra.DeviceClassGPU, nvdra.DeviceClassMIG}

// draDeviceClassType is the device type each DeviceClass selects.
var draDeviceClassType = map[string]string{
	nvdra.DeviceClassGPU: nvdra.DeviceTypeGPU,
	nvdra.DeviceClassMIG: nvdra.DeviceTypeMIG,
}

// FeatureGateMaturity is a feature gate's stage and default, as the
// driver registers it.
type FeatureGateMaturity struct {
	Stage   string // "alpha", "beta" or "GA"
	Default bool
}

// DRADriverFeatureGates are the gates the driver's FEATURE_GATES accepts
// (pkg/featuregates/featuregates.go at nvdra.DriverVersion: its own three,
// and component-base v0.34's logging gates it adds); any other name stops
// the plugin at start.
var DRADriverFeatureGates = map[string]FeatureGateMaturity{
	"TimeSlicingSettings":     {Stage: "alpha", Default: false},
	"MPSSupport":              {Stage: "alpha", Default: false},
	"IMEXDaemonsWithDNSNames": {Stage: "beta", Default: true},
	"ContextualLogging":       {Stage: "beta", Default: true},
	"LoggingAlphaOptions":     {Stage: "alpha", Default: false},
	"LoggingBetaOptions":      {Stage: "beta", Default: true},
}

// DRADriverSpec is everything gpu_dra_driver deploys, before any
// Kubernetes object is built from it.
type DRADriverSpec struct {
	Namespace, Name   string
	Image             string
	ImagePullPolicy   corev1.PullPolicy
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	PriorityClassName string
	// GPUNodeAffinity restricts the pods to the chart's GPU nodes: NFD's
	// NVIDIA PCI device or NVIDIA CPU vendor label, or
	// nvidia.com/gpu.present=true.
	GPUNodeAffinity bool
	DriverRoot      string // the host's driver root: "/" or /run/nvidia/driver
	LogVerbosity    int
	FeatureGates    map[string]bool
	// DeviceClasses are those of DRADeviceClasses to create.
	DeviceClasses []string
	// ExtendedResourceName, when set, is the GPU DeviceClass's
	// extendedResourceName: pods asking for that extended resource get
	// whole GPUs through DRA on nodes where no device plugin advertises it.
	ExtendedResourceName string

	// Owner is written into AnnotationOwner on every object; empty writes none.
	Owner string
}

// Object names, as the chart derives them from the release name.
func (s DRADriverSpec) DaemonSetName() string      { return s.Name + "-kubelet-plugin" }
func (s DRADriverSpec) ServiceAccountName() string { return s.Name + "-service-account-kubeletplugin" }
func (s DRADriverSpec) ClusterRoleName() string    { return s.Name + "-clusterrole-kubeletplugin" }
func (s DRADriverSpec) ClusterRoleBindingName() string {
	return s.Name + "-clusterrole-binding-kubeletplugin"
}
func (s DRADriverSpec) RoleName() string        { return s.Name + "-role-kubeletplugin" }
func (s DRADriverSpec) RoleBindingName() string { return s.Name + "-role-binding-kubeletplugin" }

// ID is namespace/name, the resource's Terraform ID.
func (s DRADriverSpec) ID() string { return s.Namespace + "/" + s.Name }

// FeatureGateEnabled is whether gate is on: as set, else its default.
func (s DRADriverSpec) FeatureGateEnabled(gate string) bool {
	if v, ok := s.FeatureGates[gate]; ok {
		return v
	}
	return DRADriverFeatureGates[gate].Default
}

// featureGatesValue is FEATURE_GATES as the chart writes it ("A=true,B=false"),
// in name order; "" for none.
func featureGatesValue(gates map[string]bool) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		parts = append(parts, name+"="+strconv.FormatBool(gates[name]))
	}
	return strings.Join(parts, ",")
}

// parseFeatureGates reads FEATURE_GATES back; entries it cannot read are
// skipped (the driver would refuse them).
func parseFeatureGates(value string) map[string]bool {
	var gates map[string]bool
	for _, part := range strings.Split(value, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		b, err := strconv.ParseBool(v)
		if !ok || err != nil {
			continue
		}
		if gates == nil {
			gates = map[string]bool{}
		}
		gates[name] = b
	}
	return gates
}

// selectorLabels select the kubelet plugin's pods: the chart's selector,
// so that a Helm release imported keeps its (immutable) selector.
func (s DRADriverSpec) selectorLabels() map[string]string {
	return map[string]string{draComponentLabel: draComponentKubelet}
}

// labels are the chart's template labels and selector, and this
// provider's marks.
func (s DRADriverSpec) labels() map[string]string {
	l := s.clusterLabels()
	l[draComponentLabel] = draComponentKubelet
	return l
}

// clusterLabels label the objects no selector reads.
func (s DRADriverSpec) clusterLabels() map[string]string {
	return map[string]string{LabelName: draChartName, LabelInstance: s.Name, LabelManagedBy: FieldManager, LabelPartOf: "nvidia-gpu"}
}

package kube

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Node Feature Discovery (kubernetes-sigs/node-feature-discovery) turns the
// features file GPU Feature Discovery writes into node labels: its worker
// (a DaemonSet) reads /etc/kubernetes/node-feature-discovery/features.d on
// each node and publishes a NodeFeature object; its master (a Deployment)
// labels the node from it, in the label namespaces it allows (nvidia.com
// only through -extra-label-ns). Without both, GFD's labels never reach a
// node. NVIDIA's device-plugin Helm chart v0.20.0 therefore deploys NFD
// v0.19.0 (its nfd subchart, condition nfd.enabled,gfd.enabled) whenever
// gfd.enabled, with extraLabelNs ["nvidia.com"] and a worker whose PCI
// source labels devices of classes 02 and 03 by vendor
// (feature.node.kubernetes.io/pci-10de.present, which GPUNodeSelector
// matches). The objects below are that deployment, minus its garbage
// collector (the workers' NodeFeatures are owned by their pods here, so
// they go with them), its topology updater (off by default) and its
// post-delete prune job (labels NFD wrote stay on the nodes after a
// destroy, as after a helm uninstall with pruning off). Its CRDs are
// created when missing and then left, as Helm treats a chart's crds/.

// DefaultNFDImage is the Node Feature Discovery release NVIDIA's
// device-plugin chart v0.20.0 deploys.
const DefaultNFDImage = "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"

// The components of Node Feature Discovery, as app.kubernetes.io/name.
const (
	ComponentNFDMaster = "nfd-master"
	ComponentNFDWorker = "nfd-worker"
)

// nfdCRDs is NFD v0.19.0's CRDs (NodeFeature, NodeFeatureGroup,
// NodeFeatureRule), as its chart's crds/nfd-api-crds.yaml has them.
//
//go:embed deviceplugin_nfd_crds.yaml
var nfdCRDs []byte

// NFDLabelNamespace is the label namespace GFD writes in, which the master
// must be told to allow.
const NFDLabelNamespace = "nvidia.com"

// nfdWorkerConfig is the worker's config file: the device-plugin chart's
// (PCI classes 02 network and 03 display, labeled by vendor only).
const nfdWorkerConfig = `sources:
  pci:
    deviceClassWhitelist: ["02", "03"]
    deviceLabelFields: ["vendor"]
`

const (
	nfdWorkerConfigKey = "nfd-worker.conf"
	nfdConfigDir       = "/etc/kubernetes/node-feature-discovery"
	nfdAPIGroup        = "nfd.k8s-sigs.io"
	crdCollection      = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
)

// DeploysNFD reports whether the spec deploys Node Feature Discovery.
func (s DevicePluginSpec) DeploysNFD() bool { return s.GFD != nil && s.GFD.DeployNFD }

// Object names of NFD's parts. The cluster-scoped ones carry the namespace,
// so that deployments of one name in two namespaces do not collide.
func (s DevicePluginSpec) NFDMasterName() string       { return s.Name + "-nfd-master" }
func (s DevicePluginSpec) NFDWorkerName() string       { return s.Name + "-nfd-worker" }
func (s DevicePluginSpec) NFDWorkerConfigName() string { return s.Name + "-nfd-worker-conf" }
func (s DevicePluginSpec) nfdMasterClusterRoleName() string {
	return s.Namespace + ":" + s.NFDMasterName()
}

// NFDCRDNames are the names of NFD's CustomResourceDefinitions.
func NFDCRDNames() []string {
	return []string{"nodefeatures." + nfdAPIGroup, "nodefeaturegroups." + nfdAPIGroup, "nodefeaturerules." + nfdAPIGroup}
}

// nfdObjects are NFD's objects in the order they are applied (CRDs and
// RBAC before the pods that need them); nil configurations (config false)
// give objects to read and delete only.
func (s DevicePluginSpec) nfdObjects(client kubernetes.Interface, config bool) []managedObject {
	ns := s.Namespace
	var (
		masterSA, workerSA                    *corev1ac.ServiceAccountApplyConfiguration
		clusterRole                           *rbacv1ac.ClusterRoleApplyConfiguration
		clusterRoleBinding                    *rbacv1ac.ClusterRoleBindingApplyConfiguration
		role                                  *rbacv1ac.RoleApplyConfiguration
		roleBinding                           *rbacv1ac.RoleBindingApplyConfiguration
		workerConfig                          *corev1ac.ConfigMapApplyConfiguration
		master                                *appsv1ac.DeploymentApplyConfiguration
		worker                                *appsv1ac.DaemonSetApplyConfiguration
		masterLabels, workerLabels, annotated = s.labels(ComponentNFDMaster), s.labels(ComponentNFDWorker), s.ownerAnnotations()
	)
	if config {
		masterSA = corev1ac.ServiceAccount(s.NFDMasterName(), ns).WithLabels(masterLabels).WithAnnotations(annotated)
		workerSA = corev1ac.ServiceAccount(s.NFDWorkerName(), ns).WithLabels(workerLabels).WithAnnotations(annotated)
		clusterRole = rbacv1ac.ClusterRole(s.nfdMasterClusterRoleName()).WithLabels(masterLabels).WithAnnotations(annotated).
			WithRules(NFDMasterRules()...)
		clusterRoleBinding = rbacv1ac.ClusterRoleBinding(s.nfdMasterClusterRoleName()).WithLabels(masterLabels).WithAnnotations(annotated).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(s.nfdMasterClusterRoleName())).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(ns).WithName(s.NFDMasterName()))
		role = rbacv1ac.Role(s.NFDWorkerName(), ns).WithLabels(workerLabels).WithAnnotations(annotated).
			WithRules(NFDWorkerRules()...)
		roleBinding = rbacv1ac.RoleBinding(s.NFDWorkerName(), ns).WithLabels(workerLabels).WithAnnotations(annotated).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(s.NFDWorkerName())).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(ns).WithName(s.NFDWorkerName()))
		workerConfig = corev1ac.ConfigMap(s.NFDWorkerConfigName(), ns).WithLabels(workerLabels).WithAnnotations(annotated).
			WithData(map[string]string{nfdWorkerConfigKey: nfdWorkerConfig})
		master = s.nfdMasterDeployment()
		worker = s.nfdWorkerDaemonSet()
	}
	return []managedObject{
		serviceAccountObject(client, ns, s.NFDMasterName(), masterSA),
		serviceAccountObject(client, ns, s.NFDWorkerName(), workerSA),
		clusterRoleObject(client, s.nfdMasterClusterRoleName(), clusterRole),
		clusterRoleBindingObject(client, s.nfdMasterClusterRoleName(), clusterRoleBinding),
		roleObject(client, ns, s.NFDWorkerName(), role),
		roleBindingObject(client, ns, s.NFDWorkerName(), roleBinding),
		configMapObject(client, ns, s.NFDWorkerConfigName(), workerConfig),
		deploymentObject(client, ns, s.NFDMasterName(), master),
		daemonSetObject(client, ns, s.NFDWorkerName(), worker),
	}
}

// ensureNFDCRDs creates NFD's CRDs where they are missing and leaves
// existing ones alone, whoever made them, as Helm does with a chart's
// crds/: never updated, never deleted (an NFD installed otherwise shares
// them, and deleting one deletes every NodeFeature of it).
func (s DevicePluginSpec) ensureNFDCRDs(ctx context.Context, client kubernetes.Interface) error {
	bodies, err := s.nfdCRDBodies()
	if err != nil {
		return err
	}
	rest := client.Discovery().RESTClient()
	for _, name := range NFDCRDNames() {
		err := rest.Get().AbsPath(crdCollection, name).Do(ctx).Error()
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
		}
		err = rest.Post().AbsPath(crdCollection).Param("fieldManager", FieldManager).
			SetHeader("Content-Type", "application/json").Body(bodies[name]).Do(ctx).Error()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CustomResourceDefinition %s: %w", name, err)
		}
	}
	return nil
}

// NFDMasterRules is what nfd-master may do (its chart's ClusterRole):
// read NodeFeatures and rules, label nodes, hold its leader lease.
func NFDMasterRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	rule := func(group string, resources []string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
		return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resources...).WithVerbs(verbs...)
	}
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rule("", []string{"namespaces"}, "watch", "list"),
		rule("", []string{"nodes", "nodes/status"}, "get", "patch", "update", "list"),
		rule(nfdAPIGroup, []string{"nodefeatures", "nodefeaturerules", "nodefeaturegroups"}, "get", "list", "watch"),
		rule(nfdAPIGroup, []string{"nodefeaturegroups/status"}, "patch", "update"),
		rule("coordination.k8s.io", []string{"leases"}, "create"),
		rule("coordination.k8s.io", []string{"leases"}, "get", "update").WithResourceNames("nfd-master.nfd.kubernetes.io"),
	}
}

// NFDWorkerRules is what nfd-worker may do in its namespace (its chart's
// Role): publish its node's NodeFeature, read its own pod (the owner).
func NFDWorkerRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups(nfdAPIGroup).WithResources("nodefeatures").WithVerbs("create", "get", "update", "delete"),
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").WithVerbs("get"),
	}
}

// nfdCRDBodies are the CRDs' JSON by name, marked as the spec's owner's.
func (s DevicePluginSpec) nfdCRDBodies() (map[string][]byte, error) {
	bodies := map[string][]byte{}
	for _, doc := range strings.Split(string(nfdCRDs), "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var crd map[string]any
		if err := yaml.Unmarshal([]byte(doc), &crd); err != nil {
			return nil, fmt.Errorf("reading NFD's CRDs: %w", err)
		}
		metadata, _ := crd["metadata"].(map[string]any)
		name, _ := metadata["name"].(string)
		labels := map[string]any{}
		for k, v := range s.labels(ComponentNFDMaster) {
			labels[k] = v
		}
		metadata["labels"] = labels
		annotations, _ := metadata["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
		}
		for k, v := range s.ownerAnnotations() {
			annotations[k] = v
		}
		metadata["annotations"] = annotations
		body, err := json.Marshal(crd)
		if err != nil {
			return nil, err
		}
		bodies[name] = body
	}
	for _, name := range NFDCRDNames() {
		if bodies[name] == nil {
			return nil, fmt.Errorf("reading NFD's CRDs: %s missing", name)
		}
	}
	return bodies, nil
}

// nfdMasterDeployment runs one nfd-master, allowed to write GFD's
// nvidia.com labels, anywhere the spec's tolerations allow (a cluster of
// tainted GPU nodes only has no other place for it).
func (s DevicePluginSpec) nfdMasterDeployment() *appsv1ac.DeploymentApplyConfiguration {
	c := corev1ac.Container().WithName("master").WithImage(DefaultNFDImage).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("nfd-master").
		WithArgs("-extra-label-ns=" + NFDLabelNamespace).
		WithEnv(nodeNameEnv()).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080)).
		WithSecurityContext(nfdSecurityContext())
	pod := corev1ac.PodSpec().WithServiceAccountName(s.NFDMasterName()).WithEnableServiceLinks(false).WithContainers(c)
	for _, t := range s.Tolerations {
		pod.WithTolerations(tolerationApply(t))
	}
	if s.PriorityClassName != "" {
		pod.WithPriorityClassName(s.PriorityClassName)
	}
	return appsv1ac.Deployment(s.NFDMasterName(), s.Namespace).
		WithLabels(s.labels(ComponentNFDMaster)).
		WithAnnotations(s.ownerAnnotations()).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(s.selectorLabels(ComponentNFDMaster))).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(s.labels(ComponentNFDMaster)).WithSpec(pod)))
}

// nfdWorkerDaemonSet runs nfd-worker on the nodes the spec selects,
// without the GPU node affinity: it is what labels a node as having an
// NVIDIA PCI device in the first place.
func (s DevicePluginSpec) nfdWorkerDaemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	hostMounts := []struct{ name, host, mountPath string }{
		{"host-boot", "/boot", "/host-boot"},
		{"host-os-release", "/etc/os-release", "/host-etc/os-release"},
		{"host-sys", "/sys", "/host-sys"},
		{"host-usr-lib", "/usr/lib", "/host-usr/lib"},
		{"host-lib", "/lib", "/host-lib"},
		{"host-proc-swaps", "/proc/swaps", "/host-proc/swaps"},
		{"features-d", nfdFeaturesDir, nfdFeaturesDir},
	}
	c := corev1ac.Container().WithName("worker").WithImage(DefaultNFDImage).WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("nfd-worker").
		WithArgs("-owner-refs=pod,ds").
		WithEnv(nodeNameEnv(),
			corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
			corev1ac.EnvVar().WithName("POD_UID").WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.uid")))).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080)).
		WithSecurityContext(nfdSecurityContext())
	var volumes []*corev1ac.VolumeApplyConfiguration
	for _, m := range hostMounts {
		c.WithVolumeMounts(mount(m.name, m.mountPath).WithReadOnly(true))
		volumes = append(volumes, hostPathVolume(m.name, m.host, ""))
	}
	c.WithVolumeMounts(mount("nfd-worker-conf", nfdConfigDir).WithReadOnly(true))
	volumes = append(volumes, corev1ac.Volume().WithName("nfd-worker-conf").WithConfigMap(
		corev1ac.ConfigMapVolumeSource().WithName(s.NFDWorkerConfigName()).
			WithItems(corev1ac.KeyToPath().WithKey(nfdWorkerConfigKey).WithPath(nfdWorkerConfigKey))))
	ds := s.daemonSet(s.NFDWorkerName(), ComponentNFDWorker, nil, s.NodeSelector, c)
	// The worker needs the API (its NodeFeature), none of the GPU
	// scheduling, and no NVIDIA runtime.
	pod := ds.Spec.Template.Spec
	pod.Affinity, pod.AutomountServiceAccountToken, pod.RuntimeClassName = nil, nil, nil
	pod.WithServiceAccountName(s.NFDWorkerName()).WithVolumes(volumes...)
	return ds
}

// nfdSecurityContext is NFD's chart's: read-only, non-root, nothing added.
func nfdSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

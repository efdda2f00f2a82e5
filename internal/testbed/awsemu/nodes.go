package awsemu

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// kubeAccess is the testbed cluster as the emulator uses it.
type kubeAccess interface {
	endpoint() string
	addNode(ctx context.Context, spec k8s.NodeSpec) error
	deleteNode(ctx context.Context, name string) error
	client() kubernetes.Interface
}

// clusterAccess reaches an in-process *k8s.Cluster.
type clusterAccess struct{ c *k8s.Cluster }

func (a clusterAccess) endpoint() string { return a.c.APIServerURL() }
func (a clusterAccess) addNode(ctx context.Context, spec k8s.NodeSpec) error {
	return a.c.AddNode(ctx, spec)
}
func (a clusterAccess) deleteNode(ctx context.Context, name string) error {
	return a.c.DeleteNode(ctx, name)
}
func (a clusterAccess) client() kubernetes.Interface { return a.c.Client() }

// kubeTimeout bounds one node registration or removal.
const kubeTimeout = 30 * time.Second

// after runs f once d has passed, unless the emulator stops first.
func (e *Emulator) after(d time.Duration, f func()) {
	ctx := e.ctx
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			f()
		}
	}()
}

// scaleTo makes the group's instances n: new ones register as nodes after
// the join delay, surplus ones (the oldest first) are deregistered. e.mu is
// held.
func (e *Emulator) scaleTo(key string, ng *nodegroup, n int) {
	s := e.st
	if asg := s.asgs[ng.asgName]; asg != nil {
		asg.min, asg.max, asg.desired = *ng.doc.ScalingConfig.MinSize, *ng.doc.ScalingConfig.MaxSize, *ng.doc.ScalingConfig.DesiredSize
	}
	if len(ng.nodes) > n {
		// The oldest go first: the group's termination policies end with
		// OldestInstance.
		surplus := slices.Clone(ng.nodes[:len(ng.nodes)-n])
		ng.nodes = slices.Clone(ng.nodes[len(ng.nodes)-n:])
		ng.setLaunchIssue("")
		e.removeNodes(surplus)
		return
	}
	zones := ng.launchZones()
	var added []groupNode
	failure := ""
	now := time.Now()
	for len(ng.nodes) < n && len(zones) > 0 {
		instanceType := ng.doc.InstanceTypes[len(ng.nodes)%len(ng.doc.InstanceTypes)]
		p := e.place(ng, instanceType, zones, now)
		if p.zone == "" {
			failure = p.failure
			break
		}
		s.nodeSeq++
		node := groupNode{
			instanceID:   fmt.Sprintf("i-0%016x", 0x6770750000000000+s.nodeSeq),
			nodeName:     nodeName(s.region, p.zone, s.nodeSeq),
			zone:         p.zone,
			instanceType: instanceType,
			reservation:  p.reservation,
		}
		ng.nodes = append(ng.nodes, node)
		added = append(added, node)
	}
	ng.setLaunchIssue(failure)
	if len(added) == 0 {
		return
	}
	e.after(s.joinDelay, func() {
		for _, node := range added {
			e.registerNode(key, ng, node)
		}
	})
}

// launchZones are the AZs of the group's subnets that offer its first
// instance type, in subnet order.
func (ng *nodegroup) launchZones() []string {
	var zones []string
	for _, subnet := range ng.doc.Subnets {
		zone, ok := subnetZone(ng.region, subnet)
		if ok && offered(ng.doc.InstanceTypes[0], zone) && !slices.Contains(zones, zone) {
			zones = append(zones, zone)
		}
	}
	return zones
}

// nodeName is an EC2 private DNS name as EKS nodes register with:
// ip-10-0-<subnet block + n>-<m>.<region>.compute.internal.
func nodeName(region, zone string, seq int) string {
	block := 0
	for i, s := range testSubnets {
		if s.zoneSuffix == zone[len(zone)-1:] {
			block = 32 * i
		}
	}
	return fmt.Sprintf("ip-10-0-%d-%d.%s.compute.internal", block+(seq/254)%32, seq%254+1, region)
}

// registerNode adds node to the cluster if it still belongs to the group.
func (e *Emulator) registerNode(key string, ng *nodegroup, node groupNode) {
	e.kubeMu.Lock()
	defer e.kubeMu.Unlock()
	e.mu.Lock()
	current := e.st.nodegroups[key] == ng && slices.Contains(ng.nodes, node)
	var spec k8s.NodeSpec
	if current {
		spec = ng.nodeSpec(node)
	}
	e.mu.Unlock()
	if !current || e.kube == nil {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, kubeTimeout)
	defer cancel()
	if err := e.kube.addNode(ctx, spec); err != nil && !apierrors.IsAlreadyExists(err) {
		e.log.Printf("registering node %s of node group %s: %v", node.nodeName, ng.doc.NodegroupName, err)
		return
	}
	// The cluster is up: node auto repair follows the nodes from now on.
	e.watchNodes()
}

// removeNodes deregisters nodes from the cluster, in the background.
// e.mu is held.
func (e *Emulator) removeNodes(nodes []groupNode) <-chan struct{} {
	done := make(chan struct{})
	if len(nodes) == 0 || e.kube == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		e.kubeMu.Lock()
		defer e.kubeMu.Unlock()
		ctx, cancel := context.WithTimeout(e.ctx, kubeTimeout)
		defer cancel()
		for _, node := range nodes {
			if err := e.kube.deleteNode(ctx, node.nodeName); err != nil {
				e.log.Printf("deleting node %s: %v", node.nodeName, err)
			}
		}
	}()
	return done
}

// nodeSpec is the kwok node an instance of the group registers as: the
// instance type's hardware, EKS's labels, the group's labels and taints
// (and no other taint). AL2 and AL2023 nodes advertise no GPUs until a
// device plugin runs on them; Bottlerocket NVIDIA nodes run it as part of
// the OS and advertise them at once. No GFD labels: no NVIDIA software
// has labeled a fresh EKS node.
func (ng *nodegroup) nodeSpec(node groupNode) k8s.NodeSpec {
	it, _ := ec2catalog.Lookup(node.instanceType)
	labels := map[string]string{
		"eks.amazonaws.com/nodegroup":    ng.doc.NodegroupName,
		"eks.amazonaws.com/capacityType": ng.doc.CapacityType,
		"topology.kubernetes.io/zone":    node.zone,
		"topology.kubernetes.io/region":  node.zone[:len(node.zone)-1],
		"k8s.io/cloud-provider-aws":      "",
	}
	if ng.doc.AmiType != "CUSTOM" {
		labels["eks.amazonaws.com/nodegroup-image"] = amiID(ng.doc.AmiType)
	}
	maps.Copy(labels, ng.doc.Labels)
	return k8s.NodeSpec{
		Name:               node.nodeName,
		InstanceType:       it,
		ExtraLabels:        labels,
		WithoutGPUCapacity: !bottlerocketNVIDIA(ng.doc.AmiType),
		Taints:             kubernetesTaints(ng.doc.Taints),
		OverrideTaints:     true,
	}
}

// bottlerocketNVIDIA reports whether the AMI type is a Bottlerocket NVIDIA
// variant, whose OS runs NVIDIA's device plugin itself.
func bottlerocketNVIDIA(amiType string) bool {
	return strings.HasPrefix(amiType, "BOTTLEROCKET_") && strings.Contains(amiType, "_NVIDIA")
}

// amiID is a stable, made-up AMI ID per AMI type.
func amiID(amiType string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(amiType); i++ {
		h = (h ^ uint32(amiType[i])) * 16777619
	}
	return fmt.Sprintf("ami-0%08x%08x", h, h^0x5a5a5a5a)
}

// kubernetesTaints converts EKS's taints to Kubernetes's.
func kubernetesTaints(taints []eksTaint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: kubernetesTaintEffect(t.Effect)})
	}
	return out
}

func kubernetesTaintEffect(effect string) corev1.TaintEffect {
	switch effect {
	case "NO_EXECUTE":
		return corev1.TaintEffectNoExecute
	case "PREFER_NO_SCHEDULE":
		return corev1.TaintEffectPreferNoSchedule
	}
	return corev1.TaintEffectNoSchedule
}

// relabelNodes applies the group's labels and taints to its registered
// nodes, as EKS does on a config update, removing the labels in removed.
// e.mu is held.
func (e *Emulator) relabelNodes(ng *nodegroup, removed []string) {
	if e.kube == nil || len(ng.nodes) == 0 {
		return
	}
	names := make([]string, len(ng.nodes))
	for i, n := range ng.nodes {
		names[i] = n.nodeName
	}
	labels := maps.Clone(ng.doc.Labels)
	taints := kubernetesTaints(ng.doc.Taints)
	go func() {
		e.kubeMu.Lock()
		defer e.kubeMu.Unlock()
		ctx, cancel := context.WithTimeout(e.ctx, kubeTimeout)
		defer cancel()
		client := e.kube.client()
		if client == nil {
			return
		}
		nodes := client.CoreV1().Nodes()
		for _, name := range names {
			node, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				if !apierrors.IsNotFound(err) {
					e.log.Printf("relabelling node %s: %v", name, err)
				}
				continue
			}
			for _, key := range removed {
				delete(node.Labels, key)
			}
			maps.Copy(node.Labels, labels)
			// Keep the taints Kubernetes itself manages (node.kubernetes.io/...).
			kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
				return !strings.HasPrefix(t.Key, "node.kubernetes.io/")
			})
			node.Spec.Taints = append(kept, taints...)
			if _, err := nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				e.log.Printf("relabelling node %s: %v", name, err)
			}
		}
	}()
}

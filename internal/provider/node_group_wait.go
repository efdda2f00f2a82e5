package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// eksNodeGroupLabel is the label EKS puts on every node of a managed node
// group, naming the group.
const eksNodeGroupLabel = "eks.amazonaws.com/nodegroup"

// afterApply is what follows an EKS create or update that reached ACTIVE:
// the Auto Scaling groups get the cluster-autoscaler node-template tags of
// the planned labels, taints and GPUs (prior: the state before, nil on
// create), then the group's nodes are waited for as wait_for says, within
// ctx (the resource's timeout). It returns what failed (the tagging, the
// cluster's access, the wait), which the caller reports: the group itself
// is ACTIVE, so a failure here never replaces it (see waitFailed). m
// keeps what was reached.
func (r *NodeGroupResource) afterApply(ctx context.Context, client *eks.Client, prior, m *nodeGroupModel, diags *diag.Diagnostics) error {
	spec, d := m.toSpec(ctx)
	diags.Append(d...)
	// prior: the tags the groups carried when last read (drift included),
	// so that a stale one is deleted.
	var priorTags map[string]string
	if prior != nil {
		if t := prior.NodeTemplateTags; !t.IsNull() && !t.IsUnknown() {
			priorTags = stringMapOf(t)
		} else {
			priorSpec, d := prior.toSpec(ctx)
			diags.Append(d...)
			priorTags = eks.NodeTemplateTags(priorSpec.Labels, priorSpec.Taints, int(prior.GPUsPerNode.ValueInt64()))
		}
	}
	want := eks.NodeTemplateTags(spec.Labels, spec.Taints, int(m.GPUsPerNode.ValueInt64()))
	asgs := stringsOf(ctx, m.AutoScalingGroupNames)
	start := time.Now()
	if err := client.SyncAutoScalingGroupTags(ctx, asgs, priorTags, want); err != nil {
		m.NodeTemplateTags = nodeGroupMapValue(priorTags, false)
		return fmt.Errorf("tagging the Auto Scaling groups %v with cluster-autoscaler's node-template tags: %w", asgs, err)
	}
	m.NodeTemplateTags = nodeGroupMapValue(want, false)
	tflog.Debug(ctx, "synced Auto Scaling group tags", map[string]any{"asgs": asgs, "tags": len(want), "duration": time.Since(start).String()})

	if m.WaitFor.ValueString() == nodeGroupWaitActive {
		return nil
	}
	cluster, err := r.clients.eksCluster(ctx, "", spec.ClusterName)
	if err != nil {
		return fmt.Errorf("waiting for the nodes (wait_for = %s): %w", quote(m.WaitFor.ValueString()), err)
	}
	w := kube.NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: spec.Name},
		Count:       int(spec.Scaling.Desired),
		GPUsPerNode: int(m.GPUsPerNode.ValueInt64()),
		Until:       kube.NodeGroupReady,
		Describe:    fmt.Sprintf("node group %q of EKS cluster %q", spec.Name, spec.ClusterName),
		TaintKeys:   taintKeys(spec.Taints),
	}
	if m.WaitFor.ValueString() == nodeGroupWaitGPUsAllocatable {
		w.Until = kube.NodeGroupGPUsAllocatable
	}
	start = time.Now()
	nodes, err := cluster.WaitForNodeGroup(ctx, w)
	if err != nil {
		m.ReadyNodes, m.AllocatableGPUs = types.Int64Value(int64(nodes.Ready)), types.Int64Value(nodes.AllocatableGPUs)
		return err
	}
	tflog.Debug(ctx, "waited for node group nodes", map[string]any{"until": w.Until, "count": w.Count, "duration": time.Since(start).String()})
	if w.Count == 0 {
		// Nothing was waited for: count what is there.
		if nodes, err = cluster.ReadNodeGroupNodes(ctx, w.Selector); err != nil {
			diags.AddWarning("reading EKS node group "+m.describe(), "reading the group's nodes: "+err.Error())
		}
	}
	m.ReadyNodes, m.AllocatableGPUs = types.Int64Value(int64(nodes.Ready)), types.Int64Value(nodes.AllocatableGPUs)
	return nil
}

// taintKeys are the keys of taints.
func taintKeys(taints []eks.Taint) []string {
	keys := make([]string, 0, len(taints))
	for _, t := range taints {
		keys = append(keys, t.Key)
	}
	return keys
}

// readNodes refreshes ready_nodes and allocatable_gpus from the cluster,
// unless wait_for = "active" (the cluster is then never reached). A
// cluster that cannot be read leaves them as they were, with a warning:
// a refresh does not fail for it.
func (r *NodeGroupResource) readNodes(ctx context.Context, m *nodeGroupModel, summary string, diags *diag.Diagnostics) {
	if m.WaitFor.ValueString() == nodeGroupWaitActive {
		m.ReadyNodes, m.AllocatableGPUs = types.Int64Null(), types.Int64Null()
		return
	}
	cluster, err := r.clients.eksCluster(ctx, "", m.ClusterName.ValueString())
	if err == nil {
		var nodes kube.NodeGroupNodes
		nodes, err = cluster.ReadNodeGroupNodes(ctx, map[string]string{eksNodeGroupLabel: m.NodeGroupName.ValueString()})
		if err == nil {
			m.ReadyNodes, m.AllocatableGPUs = types.Int64Value(int64(nodes.Ready)), types.Int64Value(nodes.AllocatableGPUs)
			return
		}
	}
	diags.AddWarning(summary, "reading the group's nodes in Kubernetes for ready_nodes and allocatable_gpus: "+err.Error())
	if m.ReadyNodes.IsUnknown() || m.ReadyNodes.IsNull() {
		m.ReadyNodes, m.AllocatableGPUs = types.Int64Null(), types.Int64Null()
	}
}

// readNodeTemplateTags refreshes node_template_tags from the Auto Scaling
// groups. A group that cannot be read leaves them as they were, with a
// warning.
func readNodeTemplateTags(ctx context.Context, client *eks.Client, m *nodeGroupModel, summary string, diags *diag.Diagnostics) {
	asgs := stringsOf(ctx, m.AutoScalingGroupNames)
	if len(asgs) == 0 {
		// No group yet (or any more): nothing to compare; keep what was set.
		if m.NodeTemplateTags.IsUnknown() {
			m.NodeTemplateTags = types.MapNull(types.StringType)
		}
		return
	}
	tags, err := client.ReadNodeTemplateTags(ctx, asgs)
	if err != nil {
		diags.AddWarning(summary, "reading the Auto Scaling group's node-template tags: "+err.Error())
		if m.NodeTemplateTags.IsUnknown() {
			m.NodeTemplateTags = types.MapNull(types.StringType)
		}
		return
	}
	m.NodeTemplateTags = nodeGroupMapValue(tags, false)
}

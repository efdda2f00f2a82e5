package provider

// This file owns what happens after a wait beyond ACTIVE failed (the Auto
// Scaling tags, the cluster's access, the nodes): the group EKS reports
// ACTIVE is never replaced for it. Terraform taints a resource on ANY
// error from Create, and a tainted group is destroyed and created again by
// the next apply: p5 nodes that were fine, maybe in a capacity block that
// does not give them back. So Create reports such a failure as a warning,
// saves the group with what the wait reached (ready_nodes below the
// desired size), and marks it in the resource's private state; Update,
// which Terraform never taints for, reports it as an error and marks it
// the same way. The next plan shows an in-place update (ready_nodes and
// allocatable_gpus known after apply) that waits again, until a refresh
// or a wait sees the nodes as wait_for wants them.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// nodeGroupWaitFailedKey is the private state key of the last failed wait
// beyond ACTIVE: {"error": "<what failed>"}.
const nodeGroupWaitFailedKey = "wait_failed"

// privateState is the framework's resource private state
// (req.Private, resp.Private).
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

type nodeGroupWaitFailure struct {
	Error string `json:"error"`
}

// markWaitFailed records err as the group's failed wait.
func markWaitFailed(ctx context.Context, p privateState, err error) diag.Diagnostics {
	raw, jerr := json.Marshal(nodeGroupWaitFailure{Error: err.Error()})
	if jerr != nil {
		var diags diag.Diagnostics
		diags.AddError("recording the failed wait of the node group", jerr.Error())
		return diags
	}
	return p.SetKey(ctx, nodeGroupWaitFailedKey, raw)
}

// clearWaitFailed forgets the group's failed wait.
func clearWaitFailed(ctx context.Context, p privateState) diag.Diagnostics {
	return p.SetKey(ctx, nodeGroupWaitFailedKey, nil)
}

// waitFailed returns the group's last failed wait, if one is recorded.
func waitFailed(ctx context.Context, p privateState) (string, bool) {
	if p == nil {
		return "", false
	}
	raw, diags := p.GetKey(ctx, nodeGroupWaitFailedKey)
	if diags.HasError() || len(raw) == 0 {
		return "", false
	}
	var f nodeGroupWaitFailure
	if json.Unmarshal(raw, &f) != nil {
		return "", false
	}
	return f.Error, true
}

// waitFailureDetail is the diagnostic of a failed wait beyond ACTIVE.
func waitFailureDetail(err error, m *nodeGroupModel) string {
	var cause string
	var waitErr *kube.NodeGroupWaitError
	if errors.As(err, &waitErr) && errors.Is(err, kube.ErrNoDevicePluginCanRun) {
		cause = " The wait stopped as soon as this was seen, rather than at its timeout."
	}
	return err.Error() + "\n\nEKS reports the node group ACTIVE: it is kept in the state and NOT tainted, so no apply replaces it for this." +
		cause + " ready_nodes is " + int64Text(m.ReadyNodes) + " of " + desiredText(m) +
		". Fix the cause, then apply again: the plan shows an in-place update that waits again (wait_for = " + quote(m.WaitFor.ValueString()) + ")."
}

func int64Text(v types.Int64) string {
	if v.IsNull() || v.IsUnknown() {
		return "unknown"
	}
	return strconv.FormatInt(v.ValueInt64(), 10)
}

func desiredText(m *nodeGroupModel) string {
	if len(m.Scaling) != 1 {
		return "unknown"
	}
	return int64Text(m.Scaling[0].DesiredSize)
}

// waitSatisfied says whether m's nodes, as last read, are what wait_for
// waits for: desired_size Ready, and for "gpus_allocatable" each with its
// GPUs (counted as their sum).
func (m *nodeGroupModel) waitSatisfied() bool {
	if m.WaitFor.ValueString() == nodeGroupWaitActive {
		return true
	}
	if len(m.Scaling) != 1 || m.ReadyNodes.IsNull() || m.ReadyNodes.IsUnknown() {
		return false
	}
	desired := m.Scaling[0].DesiredSize.ValueInt64()
	if m.ReadyNodes.ValueInt64() < desired {
		return false
	}
	if m.WaitFor.ValueString() == nodeGroupWaitGPUsAllocatable {
		return !m.AllocatableGPUs.IsNull() && m.AllocatableGPUs.ValueInt64() >= desired*m.GPUsPerNode.ValueInt64()
	}
	return true
}

// planWaitAgain plans an in-place wait for a group whose last wait failed:
// ready_nodes and allocatable_gpus become known after apply, with a
// warning that says why.
func planWaitAgain(ctx context.Context, p privateState, plan *nodeGroupModel, diags *diag.Diagnostics) {
	failure, ok := waitFailed(ctx, p)
	if !ok || plan.WaitFor.ValueString() == nodeGroupWaitActive {
		return
	}
	plan.ReadyNodes, plan.AllocatableGPUs = types.Int64Unknown(), types.Int64Unknown()
	first, _, _ := strings.Cut(failure, "\n")
	diags.AddWarning("waiting again for EKS node group "+plan.describe(),
		"The last apply's wait beyond ACTIVE failed: "+first+"\n\nThis apply waits again (wait_for = "+quote(plan.WaitFor.ValueString())+
			"), in place: the node group is not replaced.")
}

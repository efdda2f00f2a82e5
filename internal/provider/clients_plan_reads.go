package provider

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// This file holds what one configured provider (one Clients, so one
// Terraform command) reads from the cluster at plan time, for warnings
// only: gpu_workload's "no node has this product / MIG profile today".
//
// The read happens at most once per Clients, however many workloads plan
// in parallel, and never when the provider's kubernetes block holds values
// unknown until apply (a cluster created in the same run): its client
// would then fall back to whatever the environment points at. It is
// bounded by planNodeReadTimeout, and any failure (unreachable, forbidden,
// slow) only means no warnings: a plan never waits on, or fails for, a
// cluster that is not there yet.

// planNodeReadTimeout bounds the plan-time read of the nodes: long enough
// for a metadata-only LIST of a few thousand nodes, short enough that an
// unreachable API server costs a plan a few seconds once.
const planNodeReadTimeout = 3 * time.Second

// planReads is the plan-time state of one Clients.
type planReads struct {
	// kubernetesUnknown is true when Configure saw kubernetes settings
	// unknown until apply.
	kubernetesUnknown bool

	offerOnce sync.Once
	offer     kube.NodeGPUOffer
	offerOK   bool
}

// newPlanReads is the plan-time state of a Clients configured with block
// (nil when absent): whether it holds values unknown until apply.
func newPlanReads(block *kubernetesBlockModel) *planReads {
	return &planReads{kubernetesUnknown: block != nil && block.anyUnknown()}
}

// nodeGPUOfferAtPlan returns what the cluster's nodes offer GPU workloads,
// read once per Clients, or false when there is nothing to compare with:
// the provider is not configured, its kubernetes settings are not known
// yet, or the cluster did not answer within planNodeReadTimeout. Each
// reason is logged at debug level.
func (c *Clients) nodeGPUOfferAtPlan(ctx context.Context) (kube.NodeGPUOffer, bool) {
	if c == nil {
		return kube.NodeGPUOffer{}, false
	}
	reads := c.planReads
	if reads == nil {
		return kube.NodeGPUOffer{}, false
	}
	reads.offerOnce.Do(func() {
		if reads.kubernetesUnknown {
			tflog.Debug(ctx, "not reading the nodes at plan: the kubernetes settings are unknown until apply")
			return
		}
		cluster, err := c.Kubernetes()
		if err != nil {
			tflog.Debug(ctx, "not reading the nodes at plan: no Kubernetes client", map[string]any{"error": err.Error()})
			return
		}
		readCtx, cancel := context.WithTimeout(ctx, planNodeReadTimeout)
		defer cancel()
		offer, err := cluster.ReadNodeGPUOffer(readCtx)
		if err != nil {
			tflog.Debug(ctx, "could not read the nodes at plan: no warnings about GPU products or MIG profiles", map[string]any{
				"error": err.Error(), "timeout": planNodeReadTimeout.String(),
			})
			return
		}
		reads.offer, reads.offerOK = offer, true
	})
	return reads.offer, reads.offerOK
}

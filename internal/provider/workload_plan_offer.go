package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// This file warns, at plan, about a gpu block that asks for what no node
// of the cluster has today: a gpu.products entry no node is labeled with
// (with a did-you-mean for near misses such as NVIDIA-H100-80GB-HMB3), or a
// gpu.mig_profile no node offers. They are warnings, not errors: nodes can
// join later (a node group in the same apply), and the plan cannot know.
// The nodes are read once per plan (Clients.nodeGPUOfferAtPlan), only when
// the gpu block is new or changed and fully known, and nothing is said
// when the cluster cannot be read quickly or has no nodes at all.

// gpuOfferRequest is what a plan's gpu block asks of the nodes.
type gpuOfferRequest struct {
	products   []string // nil when gpu.products is unset
	shared     bool
	migProfile string // "" when unset
}

// warnAboutGPUOffer adds the warnings of this file to resp.
func (r *WorkloadResource) warnAboutGPUOffer(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var planned, prior types.Object
	if d := req.Plan.GetAttribute(ctx, gpuBlockPath, &planned); d.HasError() || planned.IsNull() || planned.IsUnknown() {
		return
	}
	if !req.State.Raw.IsNull() {
		if d := req.State.GetAttribute(ctx, gpuBlockPath, &prior); !d.HasError() && prior.Equal(planned) {
			return // unchanged: warned about when it was planned
		}
	}
	// The block decodes into the resource's own model, as the apply reads
	// it; it fails only while gpu.products is unknown.
	var gpu workloadGPUModel
	if d := planned.As(ctx, &gpu, basetypes.ObjectAsOptions{}); d.HasError() {
		return
	}
	ask, ok := gpuOfferRequestOf(gpu)
	if !ok || (ask.products == nil && ask.migProfile == "") {
		return
	}
	offer, ok := r.clients.nodeGPUOfferAtPlan(ctx)
	if !ok {
		return
	}
	if offer.Nodes == 0 {
		tflog.Debug(ctx, "the cluster has no nodes yet: no warnings about GPU products or MIG profiles")
		return
	}
	if ask.products != nil {
		if summary, detail := productsWarning(ask, offer); detail != "" {
			resp.Diagnostics.AddAttributeWarning(gpuProductsPath, summary, detail)
		}
	}
	if ask.migProfile != "" {
		if detail := migProfileWarning(ask.migProfile, offer); detail != "" {
			resp.Diagnostics.AddAttributeWarning(gpuMIGProfilePath, "No node offers gpu.mig_profile "+quote(ask.migProfile), detail)
		}
	}
}

// gpuOfferRequestOf is what the gpu block asks of the nodes; ok is false
// when a value it needs is unknown.
func gpuOfferRequestOf(gpu workloadGPUModel) (ask gpuOfferRequest, ok bool) {
	if gpu.Shared.IsUnknown() || gpu.MIGProfile.IsUnknown() {
		return ask, false
	}
	return gpuOfferRequest{products: gpu.Products, shared: gpu.Shared.ValueBool(), migProfile: gpu.MIGProfile.ValueString()}, true
}

// productsWarning says which of ask.products no node has, or "" when every
// one is on some node. A product matches a node as the workload's node
// affinity does: its nvidia.com/gpu.product equals it, or, with shared,
// equals it with -SHARED appended.
func productsWarning(ask gpuOfferRequest, offer kube.NodeGPUOffer) (summary, detail string) {
	if offer.LabeledNodes == 0 {
		return "No node has GPU product labels",
			fmt.Sprintf("None of the cluster's %d nodes has the nvidia.com/gpu.product label that GPU Feature Discovery writes, and gpu.products "+
				"selects nodes by it: the workload cannot be scheduled until labeled nodes join. Deploy GPU Feature Discovery "+
				"(gpu_device_plugin's gpu_feature_discovery block), or remove gpu.products.", offer.Nodes)
	}
	var missing, sentences []string
	for _, p := range ask.products {
		if slices.Contains(offer.Products, p) || (ask.shared && slices.Contains(offer.Products, p+gpulabels.SharedProductSuffix)) {
			continue
		}
		missing = append(missing, p)
		sentence := "No node is labeled " + gpulabels.Product + " = " + quote(p) + " today"
		if suggestion := closestName(p, offer.Products, normalizeProductName); suggestion != "" {
			sentence += "; did you mean " + quote(suggestion) + "?"
		} else {
			sentence += "."
		}
		sentences = append(sentences, sentence)
	}
	if len(missing) == 0 {
		return "", ""
	}
	summary = "No node has gpu.products " + strings.Join(quoteAll(missing), ", ")
	detail = strings.Join(sentences, " ") + " Products on the nodes: " + strings.Join(offer.Products, ", ") + "."
	if len(missing) == len(ask.products) {
		detail += " No entry of gpu.products is on any node, so the workload cannot be scheduled until such a node joins."
	}
	return summary, detail + " Correct the name as GPU Feature Discovery spells it, or ignore this if such nodes will join (e.g. a node group in this apply)."
}

// migProfileWarning says that no node offers profile as the
// nvidia.com/mig-<profile> resource gpu.mig_profile requests, or "" when
// one does.
func migProfileWarning(profile string, offer kube.NodeGPUOffer) string {
	if slices.Contains(offer.MIGProfiles, profile) {
		return ""
	}
	detail := "No node advertises " + gpulabels.MIGResourcePrefix + profile + " today, the resource gpu.mig_profile = " + quote(profile) +
		" requests (GPU Feature Discovery labels nvidia.com/mig-<profile>.count on nodes that offer one under the device plugin's mixed MIG strategy)."
	var single []string
	offered := slices.Clone(offer.MIGProfiles)
	for _, p := range offer.Products {
		if sp, ok := kube.SingleStrategyMIGProfile(p); ok {
			offered = append(offered, sp)
			if sp == profile {
				single = append(single, p)
			}
		}
	}
	switch {
	case len(single) > 0:
		detail += " Nodes offer it under the single MIG strategy instead, as whole nvidia.com/gpu devices: remove mig_profile and set " +
			"gpu.products = [" + strings.Join(quoteAll(single), ", ") + "]."
	case len(offered) == 0:
		detail += " No node offers MIG instances at all: MIG must be enabled and partitioned on MIG-capable GPUs (A100, A30, H100, H200) and the " +
			"device plugin run with config.mig_strategy = \"mixed\"."
	default:
		slices.Sort(offered)
		offered = slices.Compact(offered)
		if suggestion := closestName(profile, offered, strings.ToLower); suggestion != "" {
			detail += " Did you mean " + quote(suggestion) + "?"
		}
		detail += " MIG profiles on the nodes today: " + strings.Join(offered, ", ") + "."
	}
	return detail + " The workload cannot be scheduled until a node offers it; ignore this if such nodes will join."
}

// normalizeProductName is a product name without case or punctuation,
// so that "nvidia h100 80gb hbm3" and "NVIDIA-H100-80GB-HBM3" compare equal.
func normalizeProductName(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

// closestName is the name in names nearest to want after normalize, or
// "" when none is near: the same once normalized, containing it or
// contained in it (an abbreviation such as "H100"), or within a few typos
// (one per five characters, at least one; a swap of neighbors is one).
// Ties go to the first in names.
func closestName(want string, names []string, normalize func(string) string) string {
	w := normalize(want)
	best, bestDistance := "", -1
	for _, name := range names {
		n := normalize(name)
		d := editDistance(w, n)
		abbreviation := w != "" && (strings.Contains(n, w) || strings.Contains(w, n))
		if d > max(1, len(w)/5) && !abbreviation {
			continue
		}
		if bestDistance < 0 || d < bestDistance {
			best, bestDistance = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent characters,
// each counting one.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

func quoteAll(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = quote(v)
	}
	return out
}

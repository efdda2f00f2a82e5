package kube

// This file reads what a cluster's nodes offer GPU workloads today, for the
// provider's plan-time warnings (a gpu.products entry or a MIG profile no
// node has). It is one paginated LIST of the nodes' metadata only
// (PartialObjectMetadataList: names, labels, annotations; never the status
// with its image lists, the bulk of a Node), so that it costs little on a
// large cluster. It reads what GPU Feature Discovery labels, as GFD spells
// it (k8s-device-plugin internal/lm):
//
//   - nvidia.com/gpu.product: the model, "NVIDIA-H100-80GB-HBM3"; with
//     sharing "<model>-SHARED"; under the single MIG strategy
//     "<model>-MIG-<profile>" (and "<model>-MIG-INVALID" when the GPUs are
//     partitioned unevenly), the profile being advertised as nvidia.com/gpu.
//   - nvidia.com/mig-<profile>.count, .product, ...: under the mixed MIG
//     strategy, one set per profile that the node advertises as the
//     nvidia.com/mig-<profile> resource.
//
// A node GFD has not labeled (no GFD in the cluster, or not yet run on
// it) offers nothing this can see.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// NodeGPUOffer is what the nodes of a cluster offer GPU workloads, by the
// labels of GPU Feature Discovery.
type NodeGPUOffer struct {
	// Nodes is how many nodes the cluster has, with or without GPUs.
	Nodes int
	// LabeledNodes is how many of them GFD labeled with a product.
	LabeledNodes int
	// Products are the distinct nvidia.com/gpu.product values, sorted.
	Products []string
	// MIGProfiles are the MIG profiles some node offers as the
	// nvidia.com/mig-<profile> resource (the mixed strategy), sorted.
	MIGProfiles []string
}

// migStrategySingleInfix is what GFD puts between the model and the MIG
// profile in nvidia.com/gpu.product under the single MIG strategy.
const migStrategySingleInfix = "-MIG-"

// migStrategyInvalidProfile is the "profile" GFD writes when the single
// strategy does not apply (GPUs partitioned unevenly, or some without MIG).
const migStrategyInvalidProfile = "INVALID"

// ReadNodeGPUOffer reads the metadata of every node, in pages of
// DefaultPageSize, and sums up what they offer. ctx bounds the whole read:
// the provider gives it a short deadline at plan time.
func (c *Cluster) ReadNodeGPUOffer(ctx context.Context) (NodeGPUOffer, error) {
	done := logCall(ctx, "reading nodes' GPU labels", "nodes")
	var offer NodeGPUOffer
	products, profiles := map[string]bool{}, map[string]bool{}
	err := forEachNodeMetadata(ctx, c.client, DefaultPageSize, func(node *metav1.PartialObjectMetadata) {
		offer.Nodes++
		if p := node.Labels[gpulabels.Product]; p != "" {
			offer.LabeledNodes++
			products[p] = true
		}
		for key, value := range node.Labels {
			if profile, ok := mixedStrategyMIGProfile(key); ok && value != "0" {
				profiles[profile] = true
			}
		}
	})
	done(err)
	if err != nil {
		return NodeGPUOffer{}, err
	}
	offer.Products = sortedKeys(products)
	offer.MIGProfiles = sortedKeys(profiles)
	return offer, nil
}

// mixedStrategyMIGProfile returns the profile of GFD's count label of a
// mixed-strategy MIG resource, "nvidia.com/mig-1g.10gb.count" → "1g.10gb".
func mixedStrategyMIGProfile(labelKey string) (string, bool) {
	rest, ok := strings.CutPrefix(labelKey, gpulabels.MIGResourcePrefix)
	if !ok {
		return "", false
	}
	profile, ok := strings.CutSuffix(rest, ".count")
	if !ok || profile == "" {
		return "", false
	}
	return profile, true
}

// SingleStrategyMIGProfile returns the MIG profile in a
// nvidia.com/gpu.product value GFD writes under the single MIG strategy,
// "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb" → "1g.5gb", or false for any other
// product (a whole GPU, or the strategy's "-MIG-INVALID").
func SingleStrategyMIGProfile(product string) (string, bool) {
	product = strings.TrimSuffix(product, gpulabels.SharedProductSuffix)
	i := strings.LastIndex(product, migStrategySingleInfix)
	if i < 0 {
		return "", false
	}
	profile := product[i+len(migStrategySingleInfix):]
	return profile, profile != "" && profile != migStrategyInvalidProfile
}

// partialObjectMetadataListJSON asks the API server for a list of objects'
// metadata only, as client-go's metadata client does, and for the full list
// from a server that cannot.
const partialObjectMetadataListJSON = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// forEachNodeMetadata calls fn with the metadata of every node, reading
// them in paginated LISTs of pageSize.
func forEachNodeMetadata(ctx context.Context, client kubernetes.Interface, pageSize int64, fn func(*metav1.PartialObjectMetadata)) error {
	rc := client.CoreV1().RESTClient()
	return listPages(ctx, pageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		body, err := rc.Get().Resource("nodes").
			VersionedParams(&lo, scheme.ParameterCodec).
			SetHeader("Accept", partialObjectMetadataListJSON).
			DoRaw(ctx)
		if err != nil {
			return "", fmt.Errorf("listing nodes' metadata: %w", err)
		}
		// A full NodeList decodes into this too: its items' other fields
		// are ignored.
		var list metav1.PartialObjectMetadataList
		if err := json.Unmarshal(body, &list); err != nil {
			return "", fmt.Errorf("decoding the nodes' metadata: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		return list.Continue, nil
	})
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

func TestReadNodeGPUOfferOnRealAPIServer(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	// Other tests of this package leave their nodes: this one looks for its
	// own products and profiles among whatever is there, and deletes its
	// nodes afterwards.
	for _, n := range []*corev1.Node{
		plainGPUNode("offer-h100-0", "OFFER-H100-80GB-HBM3", 8, 81559, nil),
		plainGPUNode("offer-h100-1", "OFFER-H100-80GB-HBM3", 8, 81559, nil),
		// The mixed MIG strategy: GFD labels one set per profile.
		plainGPUNode("offer-a100-mixed", "OFFER-A100-SXM4-40GB", 8, 40960, map[string]string{
			gpulabels.MIGStrategy:         "mixed",
			"nvidia.com/mig-1g.5gb.count": "14", "nvidia.com/mig-1g.5gb.product": "OFFER-A100-SXM4-40GB-MIG-1g.5gb",
			"nvidia.com/mig-3g.20gb.count": "2", "nvidia.com/mig-3g.20gb.product": "OFFER-A100-SXM4-40GB-MIG-3g.20gb",
		}),
		// The single strategy: the profile is in the product.
		plainGPUNode("offer-a100-single", "OFFER-A100-SXM4-40GB-MIG-2g.10gb", 8, 40960, map[string]string{gpulabels.MIGStrategy: "single"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "offer-cpu-0"}},
	} {
		require.NoError(t, createNode(ctx, admin, n))
		t.Cleanup(func() {
			require.NoError(t, admin.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}))
		})
	}

	// The transport records the kind of every list the API server sent.
	var mu sync.Mutex
	var kinds []string
	cfg := rest.CopyConfig(cluster.RESTConfig())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err != nil {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			var typeMeta metav1.TypeMeta
			_ = json.Unmarshal(body, &typeMeta)
			mu.Lock()
			kinds = append(kinds, typeMeta.Kind)
			mu.Unlock()
			return resp, err
		})
	}
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)

	offer, err := c.ReadNodeGPUOffer(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, offer.Nodes, 5)
	require.GreaterOrEqual(t, offer.LabeledNodes, 4, "the CPU node has no product")
	require.Subset(t, offer.Products, []string{"OFFER-H100-80GB-HBM3", "OFFER-A100-SXM4-40GB", "OFFER-A100-SXM4-40GB-MIG-2g.10gb"})
	require.Subset(t, offer.MIGProfiles, []string{"1g.5gb", "3g.20gb"})
	require.NotContains(t, offer.MIGProfiles, "2g.10gb", "under the single strategy a profile is advertised as nvidia.com/gpu, not nvidia.com/mig-<profile>")
	require.IsIncreasing(t, offer.Products)
	require.NotEmpty(t, kinds)
	for _, kind := range kinds {
		require.Equal(t, "PartialObjectMetadataList", kind, "the nodes' status is never transferred")
	}

	// Pages: every node is read whatever the page size.
	var paged int
	require.NoError(t, forEachNodeMetadata(ctx, c.client, 2, func(*metav1.PartialObjectMetadata) { paged++ }))
	require.Equal(t, offer.Nodes, paged)
}

func TestSingleStrategyMIGProfile(t *testing.T) {
	tests := []struct {
		product, profile string
		ok               bool
	}{
		{"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "1g.5gb", true},
		{"NVIDIA-H100-80GB-HBM3-MIG-1g.10gb+me", "1g.10gb+me", true},
		{"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "1g.5gb", true},
		{"NVIDIA-A100-SXM4-40GB-MIG-INVALID", "", false},
		{"NVIDIA-H100-80GB-HBM3", "", false},
		{"Tesla-T4-SHARED", "", false},
	}
	for _, tt := range tests {
		profile, ok := SingleStrategyMIGProfile(tt.product)
		require.Equal(t, tt.ok, ok, tt.product)
		if ok {
			require.Equal(t, tt.profile, profile, tt.product)
		}
	}
}

func TestMixedStrategyMIGProfile(t *testing.T) {
	for key, want := range map[string]string{
		"nvidia.com/mig-1g.10gb.count":    "1g.10gb",
		"nvidia.com/mig-1g.10gb+me.count": "1g.10gb+me",
		"nvidia.com/mig-1g.10gb.product":  "",
		"nvidia.com/mig.strategy":         "",
		"nvidia.com/gpu.count":            "",
	} {
		got, ok := mixedStrategyMIGProfile(key)
		require.Equal(t, want != "", ok, key)
		require.Equal(t, want, got, key)
	}
}

package provider

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// offerWorkload is a planned gpu_workload whose gpu block is gpu.
func offerWorkload(gpu string) string {
	return fmt.Sprintf(`
resource "gpu_workload" "test" {
  kind = "job"
  metadata {
    name = "offer"
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
%s
  }
}
`, gpu)
}

// requireOneWarning returns the one warning whose summary contains
// summary, and checks Terraform attached it to the configuration line
// holding attribute.
func requireOneWarning(t *testing.T, diags []planDiagnostic, summary, attribute string) planDiagnostic {
	t.Helper()
	found := warnings(diags, summary)
	require.Len(t, found, 1, "diagnostics: %+v", diags)
	require.NotNil(t, found[0].Snippet, "the warning names no attribute")
	require.Contains(t, found[0].Snippet.Code, attribute, "the warning is attached to the wrong attribute")
	return found[0]
}

func TestAccWorkload_planWarnsAboutProductsNoNodeHas(t *testing.T) {
	testAccPreCheck(t)
	// A typo, as issue 12's tester made: the did-you-mean names GFD's spelling.
	diags := terraformPlan(t, providerConfig()+offerWorkload(`    count    = 1
    products = ["NVIDIA-H100-80GB-HMB3"]`))
	w := requireOneWarning(t, diags, `No node has gpu.products "NVIDIA-H100-80GB-HMB3"`, "products")
	require.Contains(t, w.Detail, `No node is labeled nvidia.com/gpu.product = "NVIDIA-H100-80GB-HMB3" today; did you mean "NVIDIA-H100-80GB-HBM3"?`)
	require.Contains(t, w.Detail, "Products on the nodes: NVIDIA-A100-SXM4-40GB, NVIDIA-A10G, NVIDIA-H100-80GB-HBM3, Tesla-T4.")
	require.Contains(t, w.Detail, "No entry of gpu.products is on any node")

	// An abbreviation is suggested its full name; one product on a node is
	// enough to schedule, and the warning says only which are missing.
	diags = terraformPlan(t, providerConfig()+offerWorkload(`    count    = 1
    products = ["NVIDIA-A10G", "h100"]`))
	w = requireOneWarning(t, diags, `No node has gpu.products "h100"`, "products")
	require.Contains(t, w.Detail, `did you mean "NVIDIA-H100-80GB-HBM3"?`)
	require.NotContains(t, w.Detail, "No entry of gpu.products is on any node")

	// Products the nodes have: no warning.
	diags = terraformPlan(t, providerConfig()+offerWorkload(`    count    = 1
    products = ["NVIDIA-H100-80GB-HBM3", "Tesla-T4"]`))
	require.Empty(t, warnings(diags, "gpu."), "diagnostics: %+v", diags)
}

func TestAccWorkload_planWarnsAboutMIGProfilesNoNodeOffers(t *testing.T) {
	testAccPreCheck(t)
	// The fleet has no MIG node: 7g.80gb is offered nowhere.
	diags := terraformPlan(t, providerConfig()+offerWorkload(`    count       = 1
    mig_profile = "7g.80gb"`))
	w := requireOneWarning(t, diags, `No node offers gpu.mig_profile "7g.80gb"`, "mig_profile")
	require.Contains(t, w.Detail, "No node advertises nvidia.com/mig-7g.80gb today")
	require.Contains(t, w.Detail, "No node offers MIG instances at all")

	// An A100 node partitioned under the mixed strategy, labeled as GFD
	// labels it, and one under the single strategy.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p4d, _ := ec2catalog.Lookup("p4d.24xlarge")
	nodes := []k8s.NodeSpec{
		{Name: "offer-mig-mixed", InstanceType: p4d, GFDLabeled: true,
			Resources: corev1.ResourceList{gpulabels.MIGResourcePrefix + "1g.5gb": k8sresource.MustParse("56")},
			ExtraLabels: map[string]string{gpulabels.MIGStrategy: "mixed",
				"nvidia.com/mig-1g.5gb.count": "56", "nvidia.com/mig-1g.5gb.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}},
		{Name: "offer-mig-single", InstanceType: p4d, GFDLabeled: true,
			ExtraLabels: map[string]string{gpulabels.MIGStrategy: "single", gpulabels.Product: "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"}},
	}
	for _, n := range nodes {
		require.NoError(t, cluster.AddNode(ctx, n))
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), n.Name)) })
	}

	diags = terraformPlan(t, providerConfig()+offerWorkload(`    count       = 1
    mig_profile = "1g.5gb"`))
	require.Empty(t, warnings(diags, "gpu."), "a node offers 1g.5gb: %+v", diags)

	diags = terraformPlan(t, providerConfig()+offerWorkload(`    count       = 1
    mig_profile = "1g.6gb"`))
	w = requireOneWarning(t, diags, `No node offers gpu.mig_profile "1g.6gb"`, "mig_profile")
	require.Contains(t, w.Detail, `Did you mean "1g.5gb"? MIG profiles on the nodes today: 1g.5gb, 3g.20gb.`)

	// Offered only as whole nvidia.com/gpu devices: the warning says how to ask for it.
	diags = terraformPlan(t, providerConfig()+offerWorkload(`    count       = 1
    mig_profile = "3g.20gb"`))
	w = requireOneWarning(t, diags, `No node offers gpu.mig_profile "3g.20gb"`, "mig_profile")
	require.Contains(t, w.Detail, `remove mig_profile and set gpu.products = ["NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"]`)
}

func TestAccWorkload_planWarnsOnlyAboutWhatItKnows(t *testing.T) {
	testAccPreCheck(t)
	// Products known only at apply: nothing to compare at plan.
	diags := terraformPlan(t, providerConfig()+`
resource "terraform_data" "product" {
  input = "NVIDIA-H100-80GB-HMB3"
}
`+offerWorkload(`    count    = 1
    products = [terraform_data.product.output]`))
	require.Empty(t, warnings(diags, "gpu."), "diagnostics: %+v", diags)

	// Kubernetes settings known only at apply: the client would fall back
	// to KUBECONFIG, here the testbed, which must not be read.
	t.Setenv("KUBECONFIG", cluster.KubeconfigPath())
	diags = terraformPlan(t, `
resource "terraform_data" "host" {
  input = "https://127.0.0.1:6443"
}

provider "gpu" {
  kubernetes {
    host = terraform_data.host.output
  }
}
`+offerWorkload(`    count    = 1
    products = ["NVIDIA-H100-80GB-HMB3"]`))
	require.Empty(t, warnings(diags, "gpu."), "diagnostics: %+v", diags)
}

func TestAccWorkload_planSkipsTheWarningsWhenTheClusterDoesNotAnswer(t *testing.T) {
	testAccPreCheck(t)
	unreachable := func(t *testing.T, host string) {
		diags := terraformPlan(t, fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host     = %q
    token    = "unused"
    insecure = true
  }
}
`, host)+offerWorkload(`    count    = 1
    products = ["NVIDIA-H100-80GB-HMB3"]`))
		require.Empty(t, warnings(diags, "gpu."), "diagnostics: %+v", diags)
		for _, d := range diags {
			require.NotEqual(t, "error", d.Severity, "%+v", d)
		}
	}
	t.Run("Nothing listens.", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.NotFoundHandler())
		srv.Close()
		unreachable(t, srv.URL)
	})
	t.Run("The server never answers: the plan stops waiting after planNodeReadTimeout.", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		unreachable(t, srv.URL)
	})
}

func TestWarnAboutGPUOffer(t *testing.T) {
	fleet := kube.NodeGPUOffer{Nodes: 3, LabeledNodes: 2, Products: []string{"NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3"}, MIGProfiles: []string{"1g.10gb"}}
	tests := []struct {
		description string
		offer       kube.NodeGPUOffer
		prior       func(*workloadModel) // nil: a create
		planned     func(*workloadModel)
		warns       []string // fragments of the warnings' details, in order; none for no warning
	}{
		{"A product no node has is warned about at create.", fleet, nil,
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-H100-80GB-HMB3"} },
			[]string{`did you mean "NVIDIA-H100-80GB-HBM3"?`}},
		{"An unchanged gpu block is not warned about again.", fleet,
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-H100-80GB-HMB3"} },
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-H100-80GB-HMB3"} }, nil},
		{"A changed gpu block is.", fleet,
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-A10G"} },
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-B200"} },
			[]string{`No node is labeled nvidia.com/gpu.product = "NVIDIA-B200" today.`}},
		{"A cluster without nodes is not compared with.", kube.NodeGPUOffer{}, nil,
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-B200"} }, nil},
		{"Nodes without GFD labels cannot match products.", kube.NodeGPUOffer{Nodes: 2}, nil,
			func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-A10G"} },
			[]string{"None of the cluster's 2 nodes has the nvidia.com/gpu.product label"}},
		{"With shared, a -SHARED product matches.", kube.NodeGPUOffer{Nodes: 1, LabeledNodes: 1, Products: []string{"Tesla-T4-SHARED"}}, nil,
			func(m *workloadModel) { m.GPU.Products = []string{"Tesla-T4"}; m.GPU.Shared = types.BoolValue(true) }, nil},
		{"Without shared, it does not: the pods would not go there.", kube.NodeGPUOffer{Nodes: 1, LabeledNodes: 1, Products: []string{"Tesla-T4-SHARED"}}, nil,
			func(m *workloadModel) { m.GPU.Products = []string{"Tesla-T4"} },
			[]string{`did you mean "Tesla-T4-SHARED"?`}},
		{"A MIG profile near one offered gets a did-you-mean.", fleet, nil,
			func(m *workloadModel) { m.GPU.MIGProfile = types.StringValue("1g.20gb") },
			[]string{`Did you mean "1g.10gb"? MIG profiles on the nodes today: 1g.10gb.`}},
		{"A MIG profile far from any is listed without one.", fleet, nil,
			func(m *workloadModel) { m.GPU.MIGProfile = types.StringValue("7g.80gb") },
			[]string{"No node advertises nvidia.com/mig-7g.80gb today"}},
	}
	ctx := context.Background()
	s := workloadSchema(ctx)
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			reads := newPlanReads(nil)
			clients := &Clients{planReads: reads}
			reads.offerOnce.Do(func() { reads.offer, reads.offerOK = tt.offer, true })

			planned := fullWorkload(workloadKindJob)
			planned.GPU.Products, planned.GPU.MIGProfile = nil, types.StringNull()
			tt.planned(planned)
			req := resource.ModifyPlanRequest{Plan: planOf(t, s, planned), State: tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}}
			if tt.prior != nil {
				prior := fullWorkload(workloadKindJob)
				prior.GPU.Products, prior.GPU.MIGProfile = nil, types.StringNull()
				tt.prior(prior)
				req.State = stateOf(t, s, prior)
			}
			resp := &resource.ModifyPlanResponse{Plan: req.Plan}
			(&WorkloadResource{clients: clients}).warnAboutGPUOffer(ctx, req, resp)
			require.False(t, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
			require.Len(t, resp.Diagnostics, len(tt.warns), "%v", resp.Diagnostics)
			for i, fragment := range tt.warns {
				require.Contains(t, resp.Diagnostics[i].Detail(), fragment)
			}

		})
	}
}

func TestClosestName(t *testing.T) {
	products := []string{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3", "Tesla-T4"}
	for want, suggestion := range map[string]string{
		"NVIDIA-H100-80GB-HMB3": "NVIDIA-H100-80GB-HBM3", // two letters swapped
		"nvidia h100 80gb hbm3": "NVIDIA-H100-80GB-HBM3", // case and punctuation
		"H100":                  "NVIDIA-H100-80GB-HBM3", // an abbreviation
		"Tesla-T4G":             "Tesla-T4",
		"NVIDIA-B200":           "",
		"AMD-MI300X":            "",
	} {
		require.Equal(t, suggestion, closestName(want, products, normalizeProductName), want)
	}
	require.Empty(t, closestName("7g.80gb", []string{"1g.10gb"}, strings.ToLower), "two typos in a profile are too many to guess from")
	require.Equal(t, 1, editDistance("hbm3", "hmb3"), "a swap of neighbors is one edit")
	require.Equal(t, 3, editDistance("kitten", "sitting"))
	require.True(t, strings.HasPrefix(closestName("1g.20gb", []string{"1g.10gb", "7g.80gb"}, strings.ToLower), "1g.10gb"))
}

// The plan's warnings read the gpu block through workloadGPUModel, whose
// tfsdk tags must be the schema's attribute names: renaming one in the
// schema without the model (or the paths the warnings point at) fails here.
func TestGPUOfferReadsTheGPUBlockThroughTheSchema(t *testing.T) {
	ctx := context.Background()
	s := workloadSchema(ctx)

	blockType, diags := s.TypeAtPath(ctx, gpuBlockPath)
	require.False(t, diags.HasError(), "%v", diags)
	object, ok := blockType.(types.ObjectType)
	require.True(t, ok, "gpu is a single nested block: %T", blockType)
	var tags []string
	model := reflect.TypeOf(workloadGPUModel{})
	for i := range model.NumField() {
		tags = append(tags, model.Field(i).Tag.Get("tfsdk"))
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(object.AttrTypes)), tags, "workloadGPUModel has the gpu block's attributes")
	for _, p := range []path.Path{gpuProductsPath, gpuMIGProfilePath} {
		_, diags := s.AttributeAtPath(ctx, p)
		require.False(t, diags.HasError(), "the warnings point at %s: %v", p, diags)
	}

	planned := fullWorkload(workloadKindJob)
	planned.GPU.Shared = types.BoolValue(true)
	planned.GPU.MIGProfile = types.StringValue("1g.10gb")
	plan := planOf(t, s, planned)
	var gpu workloadGPUModel
	require.False(t, plan.GetAttribute(ctx, gpuBlockPath, &gpu).HasError())
	ask, ok := gpuOfferRequestOf(gpu)
	require.True(t, ok)
	require.Equal(t, gpuOfferRequest{products: planned.GPU.Products, shared: true, migProfile: "1g.10gb"}, ask)

	// gpu.products unknown (from a variable known at apply): no warning,
	// and no read of the nodes.
	plan.Raw, _ = tftypes.Transform(plan.Raw, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if p.Equal(tftypes.NewAttributePath().WithAttributeName("gpu").WithAttributeName("products")) {
			return tftypes.NewValue(v.Type(), tftypes.UnknownValue), nil
		}
		return v, nil
	})
	reads := newPlanReads(nil)
	reads.offerOnce.Do(func() { reads.offer, reads.offerOK = kube.NodeGPUOffer{Nodes: 1}, true })
	resp := &resource.ModifyPlanResponse{Plan: plan}
	req := resource.ModifyPlanRequest{Plan: plan, State: tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}}
	(&WorkloadResource{clients: &Clients{planReads: reads}}).warnAboutGPUOffer(ctx, req, resp)
	require.Empty(t, resp.Diagnostics)
}

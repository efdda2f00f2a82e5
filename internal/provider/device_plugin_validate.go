package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
)

// validateRequestsWithinLimits rejects a request above its limit, which
// the API server would refuse only at apply.
func validateRequestsWithinLimits(ctx context.Context, resources types.Object) diag.Diagnostics {
	var diags diag.Diagnostics
	if resources.IsNull() || resources.IsUnknown() {
		return diags
	}
	var requests, limits map[string]types.String
	attrs := resources.Attributes()
	for key, target := range map[string]*map[string]types.String{"requests": &requests, "limits": &limits} {
		if m, ok := attrs[key].(types.Map); ok && !m.IsNull() && !m.IsUnknown() {
			diags.Append(m.ElementsAs(ctx, target, false)...)
		}
	}
	for name, request := range requests {
		limit, ok := limits[name]
		if !ok || request.IsUnknown() || limit.IsUnknown() {
			continue
		}
		r, errR := resource.ParseQuantity(request.ValueString())
		l, errL := resource.ParseQuantity(limit.ValueString())
		if errR == nil && errL == nil && r.Cmp(l) > 0 {
			diags.AddAttributeError(path.Root("resources").AtName("requests").AtMapKey(name), "Request above limit",
				fmt.Sprintf("resources.requests[%q] %s is more than resources.limits[%q] %s: Kubernetes rejects such a container. "+
					"Lower the request or raise the limit.", name, request.ValueString(), name, limit.ValueString()))
		}
	}
	return diags
}

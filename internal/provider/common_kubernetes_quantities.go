package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
)

// keepQuantitySpelling returns prior when it is the same amount as q, else
// q as the API server writes it: the API server answers "0.5" with "500m"
// and "1024Mi" with "1Gi", which is no drift.
func keepQuantitySpelling(q resource.Quantity, prior types.String) types.String {
	if prior.IsNull() || prior.IsUnknown() {
		return types.StringValue(q.String())
	}
	if p, err := resource.ParseQuantity(prior.ValueString()); err == nil && p.Cmp(q) == 0 {
		return prior
	}
	return types.StringValue(q.String())
}

package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// deleteDeployment is the end of a Delete of a resource whose objects live
// in a namespace it may have created (gpu_device_plugin, gpu_dra_driver):
// it runs del within timeout, with the namespace deletion the private
// state and evenIfNotEmpty (delete_namespace_if_not_empty) ask for, and
// turns what was left into warnings and a failure into an error.
func deleteDeployment(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse, summary string, timeout time.Duration,
	evenIfNotEmpty bool, del func(context.Context, kube.NamespaceDeletion) (kube.DeploymentDeleted, error)) {
	created, diags := req.Private.GetKey(ctx, privateNamespaceCreated)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deleted, err := del(ctx, kube.NamespaceDeletion{Created: string(created) == "true", EvenIfNotEmpty: evenIfNotEmpty})
	for _, left := range deleted.Left {
		resp.Diagnostics.AddWarning(summary, left)
	}
	if kept := deleted.NamespaceKept; kept != nil {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("Namespace %s, which this resource created, was kept: %s. "+
			"Delete them and the namespace yourself (kubectl delete namespace %s), or set delete_namespace_if_not_empty = true and apply before destroying.",
			kept.Namespace, kept, kept.Namespace))
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
	}
}

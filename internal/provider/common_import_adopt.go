package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// importNamespaced imports a resource by "namespace/name" (id, namespace
// and name set from it) and records the ownership of what it adopts:
// read returns the owner marker of the resource's main object (another
// resource of this provider made it, its state lost) or "" (Helm or
// kubectl made it: its unmarked objects are then claimed). what names the
// resource in messages ("NVIDIA device plugin").
func importNamespaced(ctx context.Context, clients *Clients, req resource.ImportStateRequest, resp *resource.ImportStateResponse, what string,
	read func(ctx context.Context, cluster *kube.Cluster, namespace, name string) (marker string, found bool, err error)) {
	namespace, name, err := parseNamespacedImportID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("importing "+what, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), namespace)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	summary := fmt.Sprintf("importing %s (%s/%s)", what, namespace, name)
	cluster := clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	marker, found, err := read(ctx, cluster, namespace, name)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if found { // otherwise the read that follows says it does not exist
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("owner_id"), adoptedOwnerID(marker))...)
	}
}

package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// ownershipDescription is the part of a Kubernetes resource's description
// that says how it tells its objects from others'.
const ownershipDescription = "**Ownership.** Every object this resource creates carries the annotation `" + kube.AnnotationOwner + "` with " +
	"this resource's `owner_id`. A create never takes over an object that exists (it stops and says how to import it); a destroy deletes " +
	"only objects carrying this resource's ID, so an object of the same name that someone made again outside Terraform is left alone, and " +
	"a read that finds such an object drops it from the state with a warning. An import adopts the objects as they are. When someone " +
	"else (kubectl, Helm, an operator) changed fields this resource sets, the next apply sets them back, as the plan showed, and a " +
	"warning names the fields and who had changed them."

// ownerIDAttribute is the `owner_id` attribute: the ID in the owner
// annotation of the resource's objects. It lives in the state, not in
// private state: Terraform hands a resource's private state to none of the
// calls that destroy a tainted instance, and a tainted create is exactly
// what must be destroyed precisely.
func ownerIDAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Computed: true,
		MarkdownDescription: "The value of the `" + kube.AnnotationOwner + "` annotation on the objects this resource created; empty for " +
			"objects it imported without one (made by Helm or kubectl) or created by a version of this provider that did not mark objects yet.",
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
}

// ownershipOf is the ownership recorded in a state's owner_id. An empty
// one (an import of unmarked objects, or a state from before owner_id)
// claims the unmarked objects of the resource's names, and objects marked
// with legacyID, which is how earlier versions marked a RuntimeClass.
func ownershipOf(ownerID types.String, legacyID string) kube.Ownership {
	if id := ownerID.ValueString(); id != "" {
		return kube.Ownership{ID: id}
	}
	return kube.Ownership{ID: legacyID, ClaimsUnmarked: true}
}

// adoptedOwnerID is the owner_id of an import: the marker of the objects
// imported (made by another resource of this provider whose state was
// lost), or empty for unmarked ones.
func adoptedOwnerID(marker string) types.String { return types.StringValue(marker) }

// newOwnership is kube.NewOwnership as diagnostics.
func newOwnership(summary string, diags *diag.Diagnostics) kube.Ownership {
	o, err := kube.NewOwnership()
	if err != nil {
		diags.AddError(summary, err.Error())
	}
	return o
}

// replacedOutOfBand is the warning of a read that found, under the
// resource's name, an object another resource or tool made.
func replacedOutOfBand(what, marker string) string {
	by := "it has no owner marker"
	if marker != "" {
		by = fmt.Sprintf("its %s annotation is %q", kube.AnnotationOwner, marker)
	}
	return fmt.Sprintf("%s on the cluster is not the one this resource created (%s): it was deleted and made again outside Terraform. "+
		"It is no longer tracked here and will not be changed or deleted by this resource; the next apply tries to create it and "+
		"stops with an import hint.", what, by)
}

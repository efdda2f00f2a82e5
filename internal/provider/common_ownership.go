package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// privateOwnership is the private-state key that holds a resource's
// kube.Ownership: the marker its objects carry, so that a destroy deletes
// only what this resource made and a read notices an object replaced out
// of band.
const privateOwnership = "ownership"

// ownershipDescription is the part of a Kubernetes resource's description
// that says how it tells its objects from others'.
const ownershipDescription = "**Ownership.** Every object this resource creates carries the annotation `" + kube.AnnotationOwner + "` with an ID " +
	"of this resource. A create never takes over an object that exists (it stops and says how to import it); a destroy deletes only " +
	"objects carrying this resource's ID, so an object of the same name that someone made again outside Terraform is left alone, and " +
	"a read that finds such an object drops it from the state with a warning. An import adopts the objects as they are. When someone " +
	"else (kubectl, Helm, an operator) changed fields this resource sets, the next apply sets them back, as the plan showed, and a " +
	"warning names the fields and who had changed them."

// privateStateReader and privateStateWriter are what the framework's
// request and response private state offer.
type (
	privateStateReader interface {
		GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	}
	privateStateWriter interface {
		SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
	}
)

type ownershipJSON struct {
	ID             string `json:"id"`
	ClaimsUnmarked bool   `json:"claims_unmarked,omitempty"`
}

// ownershipOf reads the resource's ownership from its private state. A
// resource created by a version of this provider that kept none claims
// what it named: its unmarked objects and a RuntimeClass marked with its
// ID (legacyID), as that version marked it.
func ownershipOf(ctx context.Context, private privateStateReader, legacyID string) (kube.Ownership, diag.Diagnostics) {
	raw, diags := private.GetKey(ctx, privateOwnership)
	if diags.HasError() || len(raw) == 0 {
		return kube.Ownership{ID: legacyID, ClaimsUnmarked: true}, diags
	}
	var o ownershipJSON
	if err := json.Unmarshal(raw, &o); err != nil || o.ID == "" {
		diags.AddError("reading the resource's private state", fmt.Sprintf("the ownership record %q cannot be read (%v): this is a bug in the provider; "+
			"`terraform state rm` and `terraform import` the resource to recover", raw, err))
		return kube.Ownership{}, diags
	}
	return kube.Ownership{ID: o.ID, ClaimsUnmarked: o.ClaimsUnmarked}, diags
}

// setOwnership records o in the resource's private state.
func setOwnership(ctx context.Context, private privateStateWriter, o kube.Ownership) diag.Diagnostics {
	raw, err := json.Marshal(ownershipJSON(o))
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("writing the resource's private state", err.Error())
		return diags
	}
	return private.SetKey(ctx, privateOwnership, raw)
}

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

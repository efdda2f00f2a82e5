package kube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationOwner is on every object a resource of this provider creates
// or applies: the owner ID of that resource (see Ownership). It is how a
// destroy tells the objects it made from ones of the same name that
// someone else made, and how a read notices that its object was replaced
// out of band.
const AnnotationOwner = "gpu.gpuinfra.io/owner"

// Ownership says which objects on the cluster one Terraform resource may
// change and delete. A resource gets a fresh ID when it creates its
// objects, and keeps it in its private state.
type Ownership struct {
	// ID is the value of AnnotationOwner on the resource's objects.
	ID string
	// ClaimsUnmarked makes objects without AnnotationOwner this
	// resource's too: it imported them (made by Helm or kubectl), or an
	// older version of this provider created them before it marked
	// objects. An object marked with another ID is never claimed.
	ClaimsUnmarked bool
}

// NewOwnership is the ownership of a resource about to create its objects.
func NewOwnership() (Ownership, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return Ownership{}, fmt.Errorf("making an owner ID: %w", err)
	}
	return Ownership{ID: "tf-" + hex.EncodeToString(b)}, nil
}

// Owns reports whether an object whose AnnotationOwner is marker ("" when
// it has none) belongs to o.
func (o Ownership) Owns(marker string) bool {
	if marker == "" {
		return o.ClaimsUnmarked
	}
	return marker == o.ID
}

// owns is Owns for an object's metadata.
func (o Ownership) owns(meta metav1.Object) bool {
	return o.Owns(meta.GetAnnotations()[AnnotationOwner])
}

// NotOwnedError is an object that has the name a resource expects but was
// made by someone else; the resource leaves it alone.
type NotOwnedError struct {
	Kind, Namespace, Name string
	Marker                string // its AnnotationOwner, "" when it has none
}

func (e *NotOwnedError) Error() string {
	by := "it has no " + AnnotationOwner + " annotation"
	if e.Marker != "" {
		by = fmt.Sprintf("its %s annotation is %q", AnnotationOwner, e.Marker)
	}
	return fmt.Sprintf("%s %s was not created by this resource (%s)", e.Kind, qualifiedName(e.Namespace, e.Name), by)
}

func qualifiedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// withOwner returns annotations plus AnnotationOwner = owner (a new map;
// annotations is not changed). An empty owner adds nothing.
func withOwner(annotations map[string]string, owner string) map[string]string {
	if owner == "" {
		return annotations
	}
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		out[k] = v
	}
	out[AnnotationOwner] = owner
	return out
}

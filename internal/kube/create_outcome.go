package kube

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A create whose request was sent but whose answer never came (the
// connection dropped, the context ended while the request was in flight,
// a proxy answered 502/504) may have been carried out all the same. The
// object is then this create's when it carries this create's owner
// marker, which no other create uses: a rollback looks for it by name and
// deletes it only with that marker, and a create that cannot look keeps
// the resource in the state, so that nothing is left on the cluster that
// Terraform does not know of.

// refusedByServer reports whether err is an answer of the API server that
// says the request was not carried out: a 4xx status. A 5xx (a timeout, an
// internal error) or a transport error leaves it open whether the write
// happened.
func refusedByServer(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500
}

// createdAfterAll looks, after a create whose answer was lost, for the
// object that create would have made (get reads it, with a deadline of its
// own: the create's context may be spent): true when it exists with
// ownerID's marker, or when the look itself fails (the resource is then
// kept, and the next read settles it); false when it is absent or someone
// else's.
func createdAfterAll(ctx context.Context, ownerID string, get func(context.Context) (metav1.Object, error)) bool {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	obj, err := get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	}
	return obj.GetAnnotations()[AnnotationOwner] == ownerID
}

// mayHaveCreated reports whether a create that failed with err may have
// been carried out.
func mayHaveCreated(err error) bool { return err != nil && !refusedByServer(err) }

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// managedObject is one object a resource writes, reduced to the calls that
// ownership needs: read its metadata, create it (atomically: an existing
// object fails), server-side apply it, and delete it. Each kind of object
// (DaemonSet, ConfigMap, ServiceMonitor through the raw REST client, …)
// fills these in; putObject and deleteObject hold the rules.
type managedObject struct {
	kind, namespace, name string
	get                   func(ctx context.Context) (metav1.Object, error)
	create                func(ctx context.Context) (metav1.Object, error)
	apply                 func(ctx context.Context, opts metav1.ApplyOptions) error
	delete                func(ctx context.Context, opts metav1.DeleteOptions) error
}

func (o managedObject) String() string { return o.kind + " " + qualifiedName(o.namespace, o.name) }

// putObject makes the object exist as configured. An absent object is
// created: made is then the object, for a rollback (with an empty UID when
// the create's answer was lost and it may or may not exist). One that
// owner owns is applied, taking back what others changed (the warning
// says what); one made by someone else is left alone: an *ExistsError
// when it is unmarked or a *NotOwnedError when another resource's.
func putObject(ctx context.Context, o managedObject, owner Ownership) (made *createdObject, warning string, err error) {
	live, err := o.get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		obj, err := o.create(ctx)
		switch {
		case err == nil:
			return &createdObject{object: o, uid: obj.GetUID()}, "", nil
		case apierrors.IsAlreadyExists(err):
			return nil, "", &ExistsError{Kind: o.kind, Namespace: o.namespace, Name: o.name}
		case obj != nil: // created; what followed the create failed
			return &createdObject{object: o, uid: obj.GetUID()}, "", fmt.Errorf("creating %s: %w", o, err)
		case mayHaveCreated(err):
			return &createdObject{object: o}, "", fmt.Errorf("creating %s: %w", o, err)
		}
		return nil, "", fmt.Errorf("creating %s: %w", o, err)
	case err != nil:
		return nil, "", fmt.Errorf("reading %s: %w", o, err)
	case !owner.owns(live):
		marker := live.GetAnnotations()[AnnotationOwner]
		if marker == "" {
			return nil, "", &ExistsError{Kind: o.kind, Namespace: o.namespace, Name: o.name}
		}
		return nil, "", &NotOwnedError{Kind: o.kind, Namespace: o.namespace, Name: o.name, Marker: marker}
	}
	warning, err = applyTakingOver(ctx, o.String(), func(opts metav1.ApplyOptions) error { return o.apply(ctx, opts) })
	if err != nil {
		return nil, "", fmt.Errorf("applying %s: %w", o, err)
	}
	return nil, warning, nil
}

// createdObject is an object a create made, by UID: a rollback deletes
// that object and never a later one of the same name. An empty UID is an
// object whose create's answer was lost: a rollback deletes it if it
// exists with the create's owner marker.
type createdObject struct {
	object managedObject
	uid    types.UID
}

// deleteObject deletes the object if owner owns it, on condition that it
// is still the object read (same UID). deleted is false when it was gone
// already or replaced in between; an object someone else made is left
// and reported as a *NotOwnedError.
func deleteObject(ctx context.Context, o managedObject, owner Ownership, opts metav1.DeleteOptions) (deleted bool, err error) {
	live, err := o.get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", o, err)
	case !owner.owns(live):
		return false, &NotOwnedError{Kind: o.kind, Namespace: o.namespace, Name: o.name, Marker: live.GetAnnotations()[AnnotationOwner]}
	}
	return deleteUID(ctx, o, live.GetUID(), opts)
}

// deleteUID deletes the object if its UID is still uid.
func deleteUID(ctx context.Context, o managedObject, uid types.UID, opts metav1.DeleteOptions) (deleted bool, err error) {
	opts.Preconditions = &metav1.Preconditions{UID: &uid}
	err = o.delete(ctx, opts)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deleting %s: %w", o, err)
	}
	return true, nil
}

// asObject converts an apply configuration into the typed object it
// describes (both have the same JSON form), for a create.
func asObject[T any](config any) (*T, error) {
	data, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	obj := new(T)
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// notOwned collects the *NotOwnedError values among errs as warnings and
// returns the other errors joined.
func notOwned(errs []error) (warnings []string, err error) {
	var rest []error
	for _, e := range errs {
		var no *NotOwnedError
		if errors.As(e, &no) {
			warnings = append(warnings, no.Error()+": left in place.")
			continue
		}
		rest = append(rest, e)
	}
	return warnings, errors.Join(rest...)
}

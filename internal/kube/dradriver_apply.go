package kube

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DRADriverAbsent returns an *ExistsError when the kubelet plugin's
// DaemonSet of spec, or one of its DeviceClasses, exists already (a Helm
// release of NVIDIA's chart, a lost state), nil when none does: a create
// never takes another deployment over silently.
func (c *Cluster) DRADriverAbsent(ctx context.Context, spec DRADriverSpec) error {
	ds, err := getDaemonSet(ctx, c.client, spec.Namespace, spec.DaemonSetName())
	switch {
	case err != nil:
		return err
	case ds != nil:
		return &ExistsError{Kind: "DaemonSet", Namespace: spec.Namespace, Name: spec.DaemonSetName()}
	}
	for _, class := range spec.DeviceClasses {
		_, err := c.client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
		switch {
		case err == nil:
			return &ExistsError{Kind: "DeviceClass", Name: class}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading DeviceClass %s: %w", class, err)
		}
	}
	return nil
}

// CreateDRADriver creates the deployment spec describes, its objects
// marked as owner's: the ServiceAccount and RBAC before the DaemonSet that
// uses them, the DeviceClasses last. Each object is created atomically:
// one that exists, whoever made it, fails the create with an *ExistsError
// (the DeviceClasses have fixed names, so a second driver in the cluster
// stops there). A create that fails deletes what it had made by then;
// what it cannot delete makes the result Exists.
func (c *Cluster) CreateDRADriver(ctx context.Context, spec DRADriverSpec, owner Ownership) (DeploymentCreated, []string, error) {
	spec.Owner = owner.ID
	return c.createDeployment(ctx, spec.Namespace, owner, func(onCreate func(createdObject)) ([]string, error) {
		return c.putDRADriver(ctx, spec, owner, onCreate)
	})
}

// UpdateDRADriver brings the deployment to spec: objects it lacks are
// created, its own objects applied (what others changed since is taken
// back; the warnings say what), and the DeviceClasses spec no longer has
// are deleted when owner owns them. An object of one of spec's names that
// owner does not own is never touched: the error says so.
func (c *Cluster) UpdateDRADriver(ctx context.Context, spec DRADriverSpec, owner Ownership) (warnings []string, err error) {
	spec.Owner = owner.ID
	warnings, err = c.putDRADriver(ctx, spec, owner, func(createdObject) {})
	if err != nil {
		return warnings, err
	}
	var errs []error
	for _, class := range DRADeviceClasses {
		if !slices.Contains(spec.DeviceClasses, class) {
			_, err := deleteObject(ctx, deviceClassObject(c.client, class, nil), owner, metav1.DeleteOptions{})
			errs = append(errs, err)
		}
	}
	left, err := notOwned(errs)
	return append(warnings, left...), err
}

// putDRADriver puts every object of spec (putObject), reporting each one
// it created, or may have, to onCreate.
func (c *Cluster) putDRADriver(ctx context.Context, spec DRADriverSpec, owner Ownership, onCreate func(createdObject)) (warnings []string, err error) {
	objs := BuildDRADriverObjects(spec)
	for _, o := range draDriverManagedObjects(c.client, spec, &objs, false) {
		made, warning, err := putObject(ctx, o, owner)
		if made != nil {
			onCreate(*made)
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if err != nil {
			return warnings, err
		}
	}
	return warnings, c.requireExtendedResourceKept(ctx, spec)
}

package kube

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"
)

// A DRA workload owns one more object than its Job or Deployment: the
// ResourceClaimTemplate its pods' claims are made from. It is created
// first (a pod whose template is missing cannot be created), read with the
// workload, and deleted after it; when the workload's create makes
// nothing, the template it made is deleted again, so a failed create
// leaves nothing behind. A template of that name that this resource did
// not make is never taken over (an *ExistsError) nor deleted (a
// *NotOwnedError).

// claimTemplateObject is the managedObject of spec's template, for reads
// and deletes.
func (c *Cluster) claimTemplateObject(namespace, name string) managedObject {
	api := c.client.ResourceV1().ResourceClaimTemplates(namespace)
	return typedObject[resourcev1.ResourceClaimTemplate]("ResourceClaimTemplate", namespace, name, api, (*resourcev1ac.ResourceClaimTemplateApplyConfiguration)(nil))
}

// createClaimTemplate creates the ResourceClaimTemplate of a DRA spec
// (spec.Owner set). made is what a rollback deletes, nil when nothing was
// made.
func (c *Cluster) createClaimTemplate(ctx context.Context, spec WorkloadSpec) (made *createdObject, err error) {
	if err := c.RequireDRA(ctx); err != nil {
		return nil, err
	}
	tpl, err := BuildResourceClaimTemplate(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the ResourceClaimTemplate: %w", err)
	}
	o := c.claimTemplateObject(spec.Namespace, tpl.Name)
	done := logCall(ctx, "creating ResourceClaimTemplate", spec.ClaimTemplateID())
	created, err := c.client.ResourceV1().ResourceClaimTemplates(spec.Namespace).Create(ctx, tpl, metav1.CreateOptions{FieldManager: FieldManager})
	done(err)
	switch {
	case err == nil:
		return &createdObject{object: o, uid: created.UID}, nil
	case apierrors.IsAlreadyExists(err):
		return nil, &ExistsError{Kind: "ResourceClaimTemplate", Namespace: spec.Namespace, Name: tpl.Name}
	case mayHaveCreated(err):
		return &createdObject{object: o}, fmt.Errorf("creating ResourceClaimTemplate %s: %w", spec.ClaimTemplateID(), err)
	}
	return nil, fmt.Errorf("creating ResourceClaimTemplate %s: %w", spec.ClaimTemplateID(), err)
}

// rollBack deletes what a create made: the object of that UID, or, when
// the create's answer was lost, the object if it carries owner's marker.
func (m *createdObject) rollBack(ctx context.Context, owner Ownership) error {
	if m.uid != "" {
		_, err := deleteUID(ctx, m.object, m.uid, metav1.DeleteOptions{})
		return err
	}
	_, err := deleteObject(ctx, m.object, owner, metav1.DeleteOptions{})
	return err
}

// deleteClaimTemplate deletes the ResourceClaimTemplate of a DRA workload
// if owner owns it; one already gone is fine.
func (c *Cluster) deleteClaimTemplate(ctx context.Context, namespace, name string, owner Ownership) error {
	done := logCall(ctx, "deleting ResourceClaimTemplate", namespace+"/"+name)
	_, err := deleteObject(ctx, c.claimTemplateObject(namespace, name), owner, metav1.DeleteOptions{})
	done(err)
	return err
}

// withClaimTemplate fills the gpu criteria of a DRA workload read from the
// cluster from its ResourceClaimTemplate. A template that is gone, or not
// this provider's, leaves no criteria (Count 0): the plan shows the
// difference and makes the workload again.
func (c *Cluster) withClaimTemplate(ctx context.Context, live *WorkloadLive) error {
	if live == nil || !live.Spec.Pod.GPU.DRA() {
		return nil
	}
	s := &live.Spec
	tpl, err := c.client.ResourceV1().ResourceClaimTemplates(s.Namespace).Get(ctx, s.ClaimTemplateName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ResourceClaimTemplate %s: %w", s.ClaimTemplateID(), err)
	case tpl.Annotations[AnnotationOwner] != s.Owner:
		return nil
	}
	s.Pod.GPU, _ = gpuFromClaimTemplate(tpl)
	return nil
}

package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Server-side apply without force fails when the configuration would
// change a field another field manager set (kubectl edit, kubectl scale, a
// Helm upgrade, an operator). The provider's configuration still wins — the
// plan showed the change — but never silently: applyTakingOver re-applies
// with force and says in a warning which fields it took from whom.

// applyNoForce and applyForce are the two ways applyTakingOver sends an
// apply.
var (
	applyNoForce = metav1.ApplyOptions{FieldManager: FieldManager}
	applyForce   = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
)

// applyTakingOver runs apply without force and, when that conflicts, with
// force. It returns a warning naming the fields taken over and their
// managers, or "" when the only conflicts were with this provider's own
// earlier writes (the create, which is not an apply, records its fields
// under the same manager name with operation Update).
func applyTakingOver(ctx context.Context, what string, apply func(opts metav1.ApplyOptions) error) (warning string, err error) {
	err = apply(applyNoForce)
	if err == nil || !apierrors.IsConflict(err) {
		return "", err
	}
	taken := fieldConflicts(err)
	if len(taken) == 0 {
		// A conflict that is not about field ownership (an
		// optimistic-concurrency one): do not force through it.
		return "", err
	}
	if err := apply(applyForce); err != nil {
		return "", err
	}
	var others []string
	for _, c := range taken {
		if c.manager != FieldManager {
			others = append(others, fmt.Sprintf("%s (set by %q)", c.field, c.manager))
		}
	}
	if len(others) == 0 {
		return "", nil
	}
	slices.Sort(others)
	return fmt.Sprintf("%s: the configuration's values replaced ones changed outside Terraform since the last apply: %s. "+
		"Those tools will see their change undone; if it should stay, put it in the configuration.", what, strings.Join(others, ", ")), nil
}

type fieldConflict struct{ manager, field string }

// fieldConflicts reads the conflicts of a server-side apply's 409, whose
// causes are of type FieldManagerConflict with a message like
// `conflict with "kubectl-edit" using apps/v1` and the field path.
func fieldConflicts(err error) []fieldConflict {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	var out []fieldConflict
	for _, cause := range details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		manager := cause.Message
		if _, rest, ok := strings.Cut(cause.Message, `"`); ok {
			if name, _, ok := strings.Cut(rest, `"`); ok {
				manager = name
			}
		}
		out = append(out, fieldConflict{manager: manager, field: cause.Field})
	}
	return out
}

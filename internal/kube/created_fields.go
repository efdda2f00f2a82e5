package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
)

// A create is atomic (an existing object fails it) where a server-side
// apply is not, so objects are created with a plain create and updated
// with server-side apply. A create records its fields under this
// provider's manager with operation Update, though, and an apply removes
// only fields its own Apply entry holds: a port or an environment variable
// that a later configuration drops would stay, and could even make the
// object invalid (two ports named "metrics"). So right after the create,
// the fields move to the Apply entry, as kubectl does when it moves an
// object from client-side to server-side apply (client-go's csaupgrade).

// upgradeAttempts bounds the retries when a controller changed the object
// between the create (or the last read) and the patch.
const upgradeAttempts = 5

// ownCreatedFieldsAsApplier moves the fields of created, which this
// provider just created, to its server-side apply entry. get re-reads the
// object and patch sends a JSON patch.
func ownCreatedFieldsAsApplier(ctx context.Context, created runtime.Object,
	get func(context.Context) (runtime.Object, error), patch func(context.Context, []byte) error) error {
	obj := created
	for attempt := 1; ; attempt++ {
		data, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldManager), FieldManager)
		if err != nil {
			return fmt.Errorf("moving the created fields to server-side apply: %w", err)
		}
		if data == nil {
			return nil
		}
		err = patch(ctx, data)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == upgradeAttempts {
			return fmt.Errorf("moving the created fields to server-side apply: %w", err)
		}
		if obj, err = get(ctx); err != nil {
			return fmt.Errorf("moving the created fields to server-side apply: %w", err)
		}
	}
}

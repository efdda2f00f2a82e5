package bootstrap

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireFieldErrors asserts that a section's validate returned exactly one
// *FieldError per wanted text, in order, each containing its text.
func requireFieldErrors(t *testing.T, errs []error, want []string) {
	t.Helper()
	require.Len(t, errs, len(want), "%v", errs)
	for i, text := range want {
		var ferr *FieldError
		require.True(t, errors.As(errs[i], &ferr), "%v is not a *FieldError", errs[i])
		require.Contains(t, errs[i].Error(), text)
	}
}

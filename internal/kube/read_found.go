package kube

// found turns what a read found (nil: nothing) into the (T, found, error)
// every Read of this package returns: not found is no error.
func found[T any](v *T, err error) (T, bool, error) {
	if err != nil || v == nil {
		var zero T
		return zero, false, err
	}
	return *v, true, nil
}

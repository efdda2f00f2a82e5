package eks

import (
	"cmp"
	"strconv"
)

// compareFees orders EC2's upfront fees (decimal strings such as "2500.00")
// by amount; a fee that is not a number sorts after every one that is.
func compareFees(a, b string) int {
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	switch {
	case errA != nil && errB != nil:
		return cmp.Compare(a, b)
	case errA != nil:
		return 1
	case errB != nil:
		return -1
	}
	return cmp.Compare(fa, fb)
}

package eks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// checks is when the first n checks of a wait on s happen, from its start.
func checks(s poll.Schedule, n int) []time.Duration {
	at, wait := s.First, s.First
	out := []time.Duration{at}
	for len(out) < n {
		wait = s.Next(wait)
		at += wait
		out = append(out, at)
	}
	return out
}

func TestStatusWaitsLookAtOnceOrOneIntervalAfterTheRequestAndBackOffToFifteenSeconds(t *testing.T) {
	require.Equal(t, []time.Duration{0, 2 * time.Second, 5 * time.Second, 9500 * time.Millisecond, 16250 * time.Millisecond,
		26375 * time.Millisecond, 41375 * time.Millisecond, 56375 * time.Millisecond}, checks(checkNow, 8), "a delete looks at once")
	require.Equal(t, []time.Duration{2 * time.Second, 5 * time.Second, 9500 * time.Millisecond, 16250 * time.Millisecond,
		26375 * time.Millisecond, 41375 * time.Millisecond, 56375 * time.Millisecond}, checks(checkAfterRequest, 7),
		"a create or update looks one interval after EKS accepted it")
}

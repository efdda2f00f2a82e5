package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRejectionsEndWaitsThatBeganBeforeThem(t *testing.T) {
	r := newReachability("https://10.0.0.1:6443", time.Minute)
	start := time.Now()
	rejection := &CredentialsError{Problem: "rejected"}
	require.Nil(t, r.rejectedSince(start))

	r.rejected(rejection, start.Add(time.Second))
	require.Same(t, rejection, r.rejectedSince(start), "a rejection ends a wait under way")
	require.Nil(t, r.rejectedSince(start.Add(2*time.Second)), "a wait that began later waits for a rejection of its own")

	r.accepted()
	require.Nil(t, r.rejectedSince(start), "an accepted request ends the run of rejections")
}

func TestRejectionsOfRefreshingCredentialsEndWaitsOnTheSecondInARow(t *testing.T) {
	r := newReachability("https://10.0.0.1:6443", time.Minute)
	r.rejectionsToFail = 2 // as Connect sets it for an exec plugin, a token file or an auth provider
	start := time.Now()
	first, second := &CredentialsError{Problem: "first"}, &CredentialsError{Problem: "second"}

	r.rejected(first, start.Add(time.Second))
	require.Nil(t, r.rejectedSince(start), "the first 401 makes an exec plugin fetch new credentials")
	r.accepted()
	r.rejected(first, start.Add(2*time.Second))
	require.Nil(t, r.rejectedSince(start), "an accepted request in between starts the count again")
	r.rejected(second, start.Add(3*time.Second))
	require.Same(t, second, r.rejectedSince(start), "the second in a row ends the wait, with the latest")
}

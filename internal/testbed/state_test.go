package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProcessRecordTellsLiveProcessesFromReusedPIDs(t *testing.T) {
	startTime, err := processStartTime(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, startTime)

	require.True(t, ProcessRecord{PID: os.Getpid(), StartTime: startTime}.alive())
	require.False(t, ProcessRecord{PID: os.Getpid(), StartTime: startTime + 1}.alive(), "same pid, different process")
	require.False(t, ProcessRecord{PID: 1 << 30}.alive(), "no such pid")
}

func TestStateRoundTripsThroughItsDirectory(t *testing.T) {
	dir := t.TempDir()
	_, found, err := ReadState(dir)
	require.NoError(t, err)
	require.False(t, found)

	want := State{Dir: dir, Backends: []string{"kubernetes"}, Ready: true,
		Env:   map[string]string{"KUBECONFIG": filepath.Join(dir, "kubernetes", "admin.kubeconfig")},
		Ports: map[string]int{"kubernetes/kube-apiserver": 6443}, Processes: []ProcessRecord{{Name: "etcd", PID: 42, StartTime: 7}}}
	require.NoError(t, writeState(want))
	got, found, err := ReadState(dir)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, want, got)
	require.Empty(t, got.Running(), "pid 42 did not start at tick 7")
}

func TestRemoveFilesLeavesUnknownFilesAlone(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeState(State{Dir: dir, Backends: []string{"kubernetes"}}))
	for _, name := range []string{"kubernetes/admin.kubeconfig", "pki/ca.crt", "kubernetes/etcd/member/wal", "logs/etcd.log", "notes.txt"} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, nil, 0o600))
	}
	require.NoError(t, RemoveFiles(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "notes.txt", entries[0].Name())

	require.NoError(t, os.Remove(filepath.Join(dir, "notes.txt")))
	require.NoError(t, RemoveFiles(dir))
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "an emptied directory is removed")
}

package testbed

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeExecutable(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
}

// moduleStep is a build step like the table's, of a module under testdata:
// a real go install, seconds long.
func moduleStep(t *testing.T, module string) buildStep {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", module))
	require.NoError(t, err)
	return buildStep{
		name:     module,
		title:    module + " v1",
		dir:      filepath.Join(t.TempDir(), "bin", module+"-v1"),
		binaries: []string{module},
		goArgs:   []string{"-C", dir, "install", "-buildvcs=false", "."},
	}
}

func TestStepInstallBuildsIntoTheCacheAndLogs(t *testing.T) {
	step := moduleStep(t, "hello")
	logPath := filepath.Join(t.TempDir(), "hello-v1.log")
	var states []buildState
	require.NoError(t, step.install(context.Background(), logPath, func(s buildState) { states = append(states, s) }))
	require.Equal(t, []buildState{stateBuilding, stateBuilt}, states)
	require.True(t, isExecutable(filepath.Join(step.dir, "hello")))
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "go -C ", "the log starts with the go command it ran")

	entries, err := os.ReadDir(filepath.Dir(step.dir))
	require.NoError(t, err)
	for _, entry := range entries {
		require.NotContains(t, entry.Name(), ".building-", "the staging directory is removed")
	}

	// Built once: a second install finds it and runs no go command.
	states = nil
	require.NoError(t, os.Remove(logPath))
	require.NoError(t, step.install(context.Background(), logPath, func(s buildState) { states = append(states, s) }))
	require.Equal(t, []buildState{statePresent}, states)
	require.NoFileExists(t, logPath, "nothing was rebuilt")
}

func TestStepInstallFailureNamesTheLog(t *testing.T) {
	step := moduleStep(t, "broken")
	logPath := filepath.Join(t.TempDir(), "broken-v1.log")
	err := step.install(context.Background(), logPath, func(buildState) {})
	require.ErrorContains(t, err, "building broken v1 (log: "+logPath+")")
	require.NoFileExists(t, filepath.Join(step.dir, "broken"), "a failed build leaves nothing in the cache")
	require.Contains(t, logTail(logPath, 5), "undefined: undefinedFunction", "the compiler's error is in the log's tail")
}

// A second process building the same directory waits for the first one's
// lock and then finds the binaries there instead of building them again.
func TestStepInstallWaitsForTheLockHolder(t *testing.T) {
	step := moduleStep(t, "hello")
	require.NoError(t, os.MkdirAll(filepath.Dir(step.dir), 0o755))
	unlock, err := lockBuild(step.dir+".lock", func() { t.Fatal("the lock is free") })
	require.NoError(t, err)

	states := make(chan buildState, 4)
	done := make(chan error, 1)
	go func() {
		done <- step.install(context.Background(), filepath.Join(t.TempDir(), "log"), func(s buildState) { states <- s })
	}()
	require.Equal(t, stateLocked, <-states, "the second builder says it waits")
	writeExecutable(t, step.dir, "hello") // what the holder built
	unlock()
	require.NoError(t, <-done)
	require.Equal(t, statePresent, <-states)
}

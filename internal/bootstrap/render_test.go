package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// planStep is a step that plans the changes it holds.
type planStep struct {
	name    string
	changes []Change
}

func (s planStep) Name() string                                  { return s.name }
func (s planStep) Plan(context.Context, *Host) ([]Change, error) { return s.changes, nil }

// TestPlanOutputsOfEveryKindOfChange holds the plan, --dry-run and --json
// output of a change of every kind (a file, commands, ops with an undo, a
// GPU action) to golden files (go test -update rewrites them).
func TestPlanOutputsOfEveryKindOfChange(t *testing.T) {
	var steps []Step
	var plan Plan
	for _, s := range renderFixture() {
		steps = append(steps, s)
		plan = append(plan, StepPlan{Step: s.name, Changes: s.changes})
	}
	var planOut bytes.Buffer
	WritePlan(&planOut, plan)
	jsonOut, err := json.MarshalIndent(plan.JSON(), "", "  ")
	require.NoError(t, err)
	h, runner := newTestHost(t)
	var dryRun bytes.Buffer
	_, err = Apply(context.Background(), h, steps, ApplyOptions{DryRun: true, Out: &dryRun})
	require.NoError(t, err)
	require.Empty(t, runner.Lines(), "a dry run runs nothing")

	for name, got := range map[string][]byte{"plan.txt": planOut.Bytes(), "plan.json": append(jsonOut, '\n'), "dry-run.txt": dryRun.Bytes()} {
		golden := filepath.Join("testdata", "render", name)
		if updateGolden() {
			require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
			require.NoError(t, os.WriteFile(golden, got, 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err, "run go test -run TestPlanOutputsOfEveryKindOfChange -update to create it")
		require.Equal(t, string(want), string(got), "%s differs from %s", name, golden)
	}
}

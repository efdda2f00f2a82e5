package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// warningStep warns while planning and then plans its changes or fails.
type warningStep struct {
	name     string
	notes    []string
	warnings []string
	changes  []Change
	err      error
}

func (s warningStep) Name() string { return s.name }

func (s warningStep) Plan(_ context.Context, h *Host) ([]Change, error) {
	for _, n := range s.notes {
		h.Note("%s", n)
	}
	for _, w := range s.warnings {
		h.Warn("%s", w)
	}
	return s.changes, s.err
}

func TestPlanWarningsBelongToTheirStep(t *testing.T) {
	h := &Host{Root: t.TempDir()}
	steps := []Step{
		warningStep{name: "driver", notes: []string{`"lts" is branch 620 today`}, warnings: []string{"branch 535 reached its end of life", "branch 535 reached its end of life"}},
		warningStep{name: "runtime"},
		warningStep{name: "cdi", warnings: []string{"two specs"}, changes: []Change{{Summary: "write the spec", Ops: []Op{ActionOp(func(context.Context, *Host) error { return nil })}}}},
	}
	plan, err := MakePlan(context.Background(), h, steps)
	require.NoError(t, err)
	require.Equal(t, []string{"branch 535 reached its end of life"}, plan[0].Warnings, "the same text is said once")
	require.Empty(t, plan[1].Warnings, "a step's warnings do not leak into the next")
	require.Equal(t, []string{"two specs"}, plan[2].Warnings)

	var out bytes.Buffer
	WritePlan(&out, plan)
	require.Contains(t, out.String(), "driver: note: \"lts\" is branch 620 today\ndriver: warning: branch 535 reached its end of life\ndriver: up to date\n")
	require.Contains(t, out.String(), "cdi: warning: two specs\ncdi: will write the spec\n")

	data, err := json.Marshal(plan.JSON())
	require.NoError(t, err)
	require.Contains(t, string(data), `"step":"driver","changes":[],"warnings":["branch 535 reached its end of life"],"notes":["\"lts\" is branch 620 today"]`)
	require.NotContains(t, string(data), `"step":"runtime","changes":[],"warnings"`)
}

func TestPlanErrorKeepsTheFailingStepsWarnings(t *testing.T) {
	h := &Host{Root: t.TempDir()}
	boom := errors.New("no packages for branch 999")
	plan, err := MakePlan(context.Background(), h, []Step{
		warningStep{name: "driver", warnings: []string{"the nearest supported branch is 580"}, err: boom},
	})
	require.ErrorIs(t, err, boom)
	require.Len(t, plan, 1)
	require.Equal(t, []string{"the nearest supported branch is 580"}, plan[0].Warnings)
}

func TestApplyShowsPlanWarnings(t *testing.T) {
	h := &Host{Root: t.TempDir()}
	var out bytes.Buffer
	report, err := Apply(context.Background(), h, []Step{warningStep{name: "driver", warnings: []string{"past its end of life"}}}, ApplyOptions{Out: &out})
	require.NoError(t, err)
	require.Equal(t, []string{"driver: past its end of life"}, report.Warnings)
	require.Contains(t, out.String(), "driver: warning: past its end of life\n")
}

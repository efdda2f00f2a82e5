package bootstrap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// twoFileStep edits a main config to refer to a drop-in and creates the
// drop-in, in that (unsafe) order, as a step might list them.
type twoFileStep struct{}

func (twoFileStep) Name() string { return "engine" }

func (twoFileStep) Plan(_ context.Context, h *Host) ([]Change, error) {
	main, _, err := h.ReadFile("/etc/engine/main.conf")
	if err != nil || string(main) == "import dropin.conf\n" {
		return nil, err
	}
	return []Change{
		{Summary: "import the drop-in", Ops: []Op{FileOp{File: &FileChange{Path: "/etc/engine/main.conf", Old: main, New: []byte("import dropin.conf\n")}}}},
		{Summary: "reload", Ops: commandOps(Command{Name: "true"})},
		{Summary: "add the drop-in", Ops: []Op{FileOp{File: &FileChange{Path: "/etc/engine/dropin.conf", New: []byte("runtime nvidia\n")}}}},
	}, nil
}

// A new file is written before the edit that makes the engine load it, so a
// process killed between the two leaves a config that loads.
func TestNewFilesAreWrittenBeforeTheEditsThatReferToThem(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/engine/main.conf", "plain\n", 0o644)
	plan, err := MakePlan(context.Background(), h, []Step{twoFileStep{}})
	require.NoError(t, err)
	var order []string
	for _, c := range plan[0].Changes {
		order = append(order, c.Summary)
	}
	require.Equal(t, []string{"add the drop-in", "reload", "import the drop-in"}, order,
		"file writes are reordered among themselves; other changes keep their place")
}

package bootstrap

import (
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// WritePlan prints a plan the way `gpu-bootstrap plan` shows it: each step,
// its notes, warnings and changes, and for files a unified diff.
func WritePlan(out io.Writer, plan Plan) {
	for _, step := range plan {
		writeStepMessages(out, step)
		if len(step.Changes) == 0 {
			fmt.Fprintf(out, "%s: up to date\n", step.Step)
			continue
		}
		for _, change := range step.Changes {
			fmt.Fprintf(out, "%s: will %s\n", step.Step, change.Summary)
			writeChangeDetail(out, change)
		}
	}
	if plan.Empty() {
		fmt.Fprintln(out, "No changes: the host already matches the desired state.")
		return
	}
	fmt.Fprintf(out, "Plan: %d change(s). Run `gpu-bootstrap apply` to make them.\n", plan.Count())
}

// writeStepMessages shows what a step said while planning: notes, then
// warnings.
func writeStepMessages(out io.Writer, step StepPlan) {
	for _, n := range step.Notes {
		fmt.Fprintf(out, "%s: note: %s\n", step.Step, n)
	}
	for _, w := range step.Warnings {
		fmt.Fprintf(out, "%s: warning: %s\n", step.Step, w)
	}
}

// writeChangeDetail shows a change's ops: a file's diff, command lines,
// removals and checks, then what Undo would put back.
func writeChangeDetail(out io.Writer, change Change) {
	for _, op := range change.Ops {
		writeOp(out, "    ", op)
	}
	if len(change.Undo) > 0 {
		fmt.Fprintln(out, "    if it fails part way, put back:")
		for _, op := range change.Undo {
			writeOp(out, "      ", op)
		}
	}
	if change.Restart != "" {
		fmt.Fprintf(out, "    (%s must restart to pick this up)\n", change.Restart)
	}
	if change.Note != "" {
		fmt.Fprintf(out, "    note: %s\n", change.Note)
	}
}

// writeOp shows one op: a command line, a file's diff, a removal or a
// check; a GPU action shows nothing beyond the change's summary.
func writeOp(out io.Writer, prefix string, op Op) {
	switch op := op.(type) {
	case CommandOp:
		fmt.Fprintf(out, "%s$ %s\n", prefix, op.Command)
	case FileOp:
		fmt.Fprint(out, indent(FileDiff(op.File), prefix))
	case ActionOp:
	default:
		fmt.Fprintf(out, "%s%s\n", prefix, op)
	}
}

// writeDryRunDetail is writeChangeDetail for --dry-run, which prints the
// whole file a file change would write.
func writeDryRunDetail(out io.Writer, change Change) {
	file := change.File()
	if file == nil {
		writeChangeDetail(out, change)
		return
	}
	fmt.Fprintf(out, "    --- %s as it would be written ---\n", file.Path)
	fmt.Fprint(out, indent(string(file.New), "    "))
	fmt.Fprintf(out, "    --- end of %s ---\n", file.Path)
}

// FileDiff is the unified diff of a file change.
func FileDiff(f *FileChange) string {
	from := f.Path
	if f.Old == nil {
		from = "/dev/null"
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        diffLines(f.Old),
		B:        diffLines(f.New),
		FromFile: from,
		ToFile:   f.Path,
		Context:  2,
	})
	if err != nil {
		return fmt.Sprintf("(no diff: %v)\n", err)
	}
	return diff
}

// diffLines splits content into lines, each ending in a newline, for
// difflib. (difflib.SplitLines adds an empty line after a final newline,
// which would show in every diff as a blank line.)
func diffLines(content []byte) []string {
	lines := strings.SplitAfter(string(content), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n" // no newline at the end of the file
	}
	return lines
}

func indent(text, prefix string) string {
	if text == "" {
		return ""
	}
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, line := range lines {
		if line == "" {
			continue
		}
		b.WriteString(prefix)
		b.WriteString(line)
	}
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

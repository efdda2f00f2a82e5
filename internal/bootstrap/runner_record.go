package bootstrap

import (
	"context"
	"strings"
	"sync"
)

// RecordingRunner is the Runner of tests and of `--dry-run`: it runs
// nothing, records every command, and answers each with the reply registered
// for the longest matching command-line prefix (exit 0 and no output when none
// matches).
type RecordingRunner struct {
	mu      sync.Mutex
	Calls   []Command
	replies []reply
}

type reply struct {
	prefix string
	out    Output
}

// Reply registers the answer to commands whose String() starts with prefix
// (chroot prefix excluded). A non-zero ExitCode makes Run return a
// *CommandError, as ExecRunner would.
func (r *RecordingRunner) Reply(prefix string, out Output) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies = append(r.replies, reply{prefix: prefix, out: out})
}

// Run implements Runner.
func (r *RecordingRunner) Run(_ context.Context, c Command) (Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Calls = append(r.Calls, c)
	line := Command{Name: c.Name, Args: c.Args}.String()
	best := -1
	for i, rep := range r.replies {
		if strings.HasPrefix(line, rep.prefix) && (best < 0 || len(rep.prefix) >= len(r.replies[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return Output{}, nil
	}
	out := r.replies[best].out
	if out.ExitCode != 0 {
		return out, &CommandError{Command: c, Output: out}
	}
	return out, nil
}

// Lines is every recorded command as a command line, for assertions.
func (r *RecordingRunner) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := make([]string, len(r.Calls))
	for i, c := range r.Calls {
		lines[i] = c.String()
	}
	return lines
}

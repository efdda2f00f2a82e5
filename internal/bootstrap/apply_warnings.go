package bootstrap

import (
	"bufio"
	"bytes"
	"strings"
)

// commandWarnings are the warnings a command printed while exiting 0: the
// "W: " lines of apt-get and apt-mark (apt's own prefix for a warning, as
// apt-private/acqprogress and apt-pkg/error print them), with their
// continuation lines. apt-get update exits 0 when a repository's signature
// does not verify ("W: GPG error: … The following signatures couldn't be
// verified …" then "W: The repository … is not signed" or "… the previous
// index files will be used") or when an index cannot be fetched ("W:
// Failed to fetch …", "W: Some index files failed to download. They have
// been ignored, or old ones used instead."); apply shows every such line
// and an Op's FatalWarnings turn the ones about the repository being
// installed from into a failure.
func commandWarnings(out Output) []string {
	var warnings []string
	for _, stream := range [][]byte{out.Stderr, out.Stdout} {
		scanner := bufio.NewScanner(bytes.NewReader(stream))
		scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		inWarning := false
		for scanner.Scan() {
			line := scanner.Text()
			switch {
			case strings.HasPrefix(line, "W: "):
				warnings = append(warnings, strings.TrimSpace(line[3:]))
				inWarning = true
			case inWarning && strings.HasPrefix(line, "   "):
				// apt indents a long warning's further lines.
				warnings[len(warnings)-1] += " " + strings.TrimSpace(line)
			default:
				inWarning = false
			}
		}
	}
	return warnings
}

// fatalWarnings are the warnings that mention one of the fatal strings.
func fatalWarnings(warnings, fatal []string) []string {
	var out []string
	for _, w := range warnings {
		for _, f := range fatal {
			if strings.Contains(w, f) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// WarningError is a command that exited 0 but warned about something the
// change cannot go on without: apt-get update could not refresh (or
// verify) the repository the next command installs from.
type WarningError struct {
	Command  Command
	Warnings []string
}

func (e *WarningError) Error() string {
	return e.Command.String() + " exited 0 but warned: " + strings.Join(e.Warnings, "; ") +
		" (the index of that repository is stale or unverified, so nothing was installed from it: fix the repository or its key, then run apply again)"
}

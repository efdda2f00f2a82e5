package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Command is one program invocation: a name and its arguments, never a shell
// string.
type Command struct {
	// Root is the file-system root the command acts on. When it is not "/",
	// ExecRunner runs the command under chroot(8), as image builds do.
	Root string
	Name string
	Args []string
}

// String is the command as a person would type it, quoted where needed.
func (c Command) String() string {
	words := make([]string, 0, len(c.Args)+3)
	if !isLiveRoot(c.Root) {
		words = append(words, "chroot", quoteWord(c.Root))
	}
	words = append(words, quoteWord(c.Name))
	for _, arg := range c.Args {
		words = append(words, quoteWord(arg))
	}
	return strings.Join(words, " ")
}

func quoteWord(word string) string {
	if word != "" && !strings.ContainsAny(word, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
		return word
	}
	return strconv.Quote(word)
}

// Output is what a command printed and how it exited.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Runner runs commands. ExecRunner runs them for real; tests record them.
type Runner interface {
	Run(ctx context.Context, cmd Command) (Output, error)
}

// CommandError is a command that ran and exited non-zero.
type CommandError struct {
	Command Command
	Output  Output
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s exited with status %d", e.Command, e.Output.ExitCode)
	if tail := lastLines(e.Output.Stderr, 5); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// ExecRunner runs commands with os/exec; a non-zero exit is a *CommandError.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, c Command) (Output, error) {
	name, args := c.Name, c.Args
	if !isLiveRoot(c.Root) {
		name, args = "chroot", append([]string{c.Root, c.Name}, c.Args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		out.ExitCode = exitErr.ExitCode()
		return out, &CommandError{Command: c, Output: out}
	}
	if err != nil {
		return out, fmt.Errorf("running %s: %w", c, err)
	}
	return out, nil
}

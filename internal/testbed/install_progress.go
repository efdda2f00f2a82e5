package testbed

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// buildState is where one build of Install stands.
type buildState int

const (
	stateQueued   buildState = iota // waiting for a free slot in the pool
	stateLocked                     // waiting for another process building the same directory
	stateBuilding                   // its go command runs
	stateBuilt                      // built by this run and moved into the cache
	statePresent                    // found in the cache, not rebuilt
	stateFailed                     // its go command failed; the log says why
)

// progressLine is what the user sees of one build.
type progressLine struct {
	title   string // "Kubernetes v1.31.4 (kube-apiserver, ...)"
	dir     string // the cache directory it ends up in
	log     string // where its go command's output goes
	state   buildState
	started time.Time
	ended   time.Time
}

// progress shows one line per build. In a terminal the lines are redrawn
// in place (tick redraws the elapsed times); elsewhere (a pipe, a CI log)
// each build prints a plain line when it starts and when it ends, and
// nothing is redrawn.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	terminal bool
	lines    []progressLine
	drawn    int // lines on screen from the last redraw (terminal only)
}

func newProgress(out io.Writer, terminal bool, lines []progressLine) *progress {
	return &progress{out: out, terminal: terminal, lines: lines}
}

// set moves build i to state at now and shows it.
func (p *progress) set(i int, state buildState, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := &p.lines[i]
	line.state = state
	switch state {
	case stateBuilding:
		line.started = now
	case stateBuilt, stateFailed:
		line.ended = now
	}
	if p.terminal {
		p.redraw(now)
		return
	}
	if state != stateQueued {
		fmt.Fprintln(p.out, line.render(now))
	}
}

// tick redraws the lines with their elapsed times (terminal only).
func (p *progress) tick(now time.Time) {
	if !p.terminal {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redraw(now)
}

// redraw moves the cursor up to the first line drawn last time (CSI n A)
// and rewrites each line after erasing it (CSI 2 K): ECMA-48 control
// functions CUU and EL, which every terminal emulator in use implements
// (https://ecma-international.org/publications-and-standards/standards/ecma-48/,
// sections 8.3.22 and 8.3.41).
func (p *progress) redraw(now time.Time) {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	for _, line := range p.lines {
		b.WriteString("\r\x1b[2K")
		b.WriteString(line.render(now))
		b.WriteByte('\n')
	}
	p.drawn = len(p.lines)
	_, _ = io.WriteString(p.out, b.String()) // progress is best effort: a closed terminal must not fail the build
}

// render is the line of one build at now.
func (l progressLine) render(now time.Time) string {
	switch l.state {
	case stateQueued:
		return fmt.Sprintf("%s: queued", l.title)
	case stateLocked:
		return fmt.Sprintf("%s: waiting for another process building it into %s", l.title, l.dir)
	case stateBuilding:
		return fmt.Sprintf("%s: building, %s (log: %s)", l.title, elapsed(now.Sub(l.started)), l.log)
	case stateBuilt:
		return fmt.Sprintf("%s: built in %s into %s", l.title, elapsed(l.ended.Sub(l.started)), l.dir)
	case statePresent:
		return fmt.Sprintf("%s: already built in %s", l.title, l.dir)
	case stateFailed:
		if l.started.IsZero() {
			return fmt.Sprintf("%s: FAILED before its build started", l.title)
		}
		return fmt.Sprintf("%s: FAILED after %s (log: %s)", l.title, elapsed(l.ended.Sub(l.started)), l.log)
	}
	return l.title
}

// elapsed prints d as 0:07 or 12:34 (minutes:seconds).
func elapsed(d time.Duration) string {
	seconds := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", seconds/60, seconds%60)
}

// IsTerminal reports whether f is a terminal, where progress lines can be
// redrawn in place: whether the TCGETS ioctl, which only terminals answer,
// succeeds on it, as golang.org/x/term's IsTerminal does on Linux
// (golang/term, term_unix.go). TERM=dumb turns redrawing off.
func IsTerminal(f *os.File) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	var termios syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&termios)))
	return errno == 0
}

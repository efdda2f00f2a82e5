package testbed

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testLines() []progressLine {
	return []progressLine{
		{title: "Kubernetes v1.31.4 (kube-apiserver)", dir: "/c/bin/kube-v1.31.4", log: "/c/logs/kube-v1.31.4.log"},
		{title: "kwok v0.6.1 (kwok)", dir: "/c/bin/kwok-v0.6.1", log: "/c/logs/kwok-v0.6.1.log", state: statePresent},
	}
}

func TestProgressOnAPipeIsPlainLines(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	shown := newProgress(&out, false, testLines())
	shown.set(1, statePresent, start)
	shown.set(0, stateQueued, start)
	shown.set(0, stateBuilding, start)
	shown.tick(start.Add(30 * time.Second))
	shown.set(0, stateBuilt, start.Add(6*time.Minute+5*time.Second))

	require.Equal(t, "kwok v0.6.1 (kwok): already built in /c/bin/kwok-v0.6.1\n"+
		"Kubernetes v1.31.4 (kube-apiserver): building, 0:00 (log: /c/logs/kube-v1.31.4.log)\n"+
		"Kubernetes v1.31.4 (kube-apiserver): built in 6:05 into /c/bin/kube-v1.31.4\n", out.String(),
		"one line when a build starts and one when it ends; queued and ticks print nothing")
	require.NotContains(t, out.String(), "\r")
	require.NotContains(t, out.String(), "\x1b")
}

func TestProgressInATerminalRedrawsInPlace(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	shown := newProgress(&out, true, testLines())
	shown.set(0, stateBuilding, start)
	first := out.String()
	require.Equal(t, "\r\x1b[2KKubernetes v1.31.4 (kube-apiserver): building, 0:00 (log: /c/logs/kube-v1.31.4.log)\n"+
		"\r\x1b[2Kkwok v0.6.1 (kwok): already built in /c/bin/kwok-v0.6.1\n", first,
		"the first drawing does not move the cursor up")

	out.Reset()
	shown.tick(start.Add(75 * time.Second))
	require.True(t, strings.HasPrefix(out.String(), "\x1b[2A\r\x1b[2K"), "a redraw starts two lines up: %q", out.String())
	require.Contains(t, out.String(), "building, 1:15 (log: /c/logs/kube-v1.31.4.log)")
	require.Equal(t, 2, strings.Count(out.String(), "\n"), "still one line per build")

	out.Reset()
	shown.set(0, stateFailed, start.Add(80*time.Second))
	require.Contains(t, out.String(), "Kubernetes v1.31.4 (kube-apiserver): FAILED after 1:20 (log: /c/logs/kube-v1.31.4.log)")
}

func TestIsTerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer file.Close()
	require.False(t, IsTerminal(file), "a regular file is no terminal")

	reader, writer, err := os.Pipe()
	require.NoError(t, err)
	defer reader.Close()
	defer writer.Close()
	require.False(t, IsTerminal(writer), "a pipe (make demo | tee) is no terminal")

	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devNull.Close()
	require.False(t, IsTerminal(devNull), "a character device that is no terminal is none")

	// A pseudo-terminal's master side answers TCGETS like any terminal.
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	require.NoError(t, err, "opening a pseudo-terminal")
	defer pty.Close()
	require.True(t, IsTerminal(pty))
	t.Setenv("TERM", "dumb")
	require.False(t, IsTerminal(pty), "TERM=dumb turns redrawing off")
}

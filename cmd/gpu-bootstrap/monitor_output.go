package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry"
)

// monitorOutput prints what `gpu-bootstrap monitor` sees in one --format.
type monitorOutput interface {
	// sample prints a sample and the events derived from it.
	sample(s nvml.TelemetrySample, derived []nvml.Event)
	// event prints an event NVML reported between samples.
	event(ev nvml.Event)
	summary(s telemetry.Summary)
}

func newMonitorOutput(format string, env environment, interval time.Duration) (monitorOutput, error) {
	switch format {
	case "table":
		if isTerminal(env.stdout) {
			return &liveOutput{w: env.stdout, interval: interval}, nil
		}
		return linesOutput{w: env.stdout}, nil
	case "json":
		return jsonOutput{enc: json.NewEncoder(env.stdout)}, nil
	}
	if c, ok := telemetry.ParseCSVFormat(format); ok {
		return &csvOutput{csv: c, stdout: env.stdout, stderr: env.stderr}, nil
	}
	return nil, fmt.Errorf("--format %q: use table, csv (also csv,noheader, csv,nounits, csv,noheader,nounits as nvidia-smi takes them) or json", format)
}

// isTerminal says whether w is a terminal, where the table is redrawn in
// place. It asks the terminal driver (as isatty does), so /dev/null and
// other character devices get plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// liveOutput redraws one table per sample, with the last few events under
// it, and prints the summary below the last table.
type liveOutput struct {
	w        io.Writer
	interval time.Duration
	last     *nvml.TelemetrySample
	recent   []nvml.Event
}

// liveEvents is how many recent events the live view keeps on screen.
const liveEvents = 8

func (o *liveOutput) sample(s nvml.TelemetrySample, derived []nvml.Event) {
	o.last = &s
	o.remember(derived...)
	o.draw()
}

func (o *liveOutput) event(ev nvml.Event) {
	o.remember(ev)
	if o.last != nil {
		o.draw()
	}
}

func (o *liveOutput) remember(events ...nvml.Event) {
	o.recent = append(o.recent, events...)
	if len(o.recent) > liveEvents {
		o.recent = o.recent[len(o.recent)-liveEvents:]
	}
}

// draw moves the cursor home, clears the screen and prints the frame.
func (o *liveOutput) draw() {
	fmt.Fprintf(o.w, "\x1b[H\x1b[2Jgpu-bootstrap monitor: every %s; Ctrl-C stops and prints a summary\n%s", o.interval, telemetry.Frame(*o.last, o.recent))
}

func (o *liveOutput) summary(s telemetry.Summary) {
	fmt.Fprint(o.w, "\n"+s.Text())
}

// linesOutput prints one line per GPU per sample and one per event, for a
// log or a pipe.
type linesOutput struct{ w io.Writer }

func (o linesOutput) sample(s nvml.TelemetrySample, derived []nvml.Event) {
	fmt.Fprint(o.w, telemetry.Lines(s))
	for _, ev := range derived {
		o.event(ev)
	}
}

func (o linesOutput) event(ev nvml.Event) { fmt.Fprintln(o.w, telemetry.EventLine(ev)) }

func (o linesOutput) summary(s telemetry.Summary) { fmt.Fprint(o.w, "\n"+s.Text()) }

// csvOutput keeps stdout a clean nvidia-smi CSV: events and the summary go
// to stderr.
type csvOutput struct {
	csv            telemetry.CSV
	stdout, stderr io.Writer
	headerWritten  bool
}

func (o *csvOutput) sample(s nvml.TelemetrySample, derived []nvml.Event) {
	if !o.headerWritten {
		fmt.Fprint(o.stdout, o.csv.Header())
		o.headerWritten = true
	}
	fmt.Fprint(o.stdout, o.csv.Rows(s))
	for _, ev := range derived {
		o.event(ev)
	}
}

func (o *csvOutput) event(ev nvml.Event) { fmt.Fprintln(o.stderr, telemetry.EventLine(ev)) }

func (o *csvOutput) summary(s telemetry.Summary) { fmt.Fprint(o.stderr, "\n"+s.Text()) }

// jsonOutput writes JSON Lines: one object per sample, event and summary,
// told apart by "type".
type jsonOutput struct{ enc *json.Encoder }

type (
	jsonSample struct {
		Type string `json:"type"` // "sample"
		nvml.TelemetrySample
	}
	jsonEvent struct {
		Type string `json:"type"` // "event"
		nvml.Event
	}
	jsonSummary struct {
		Type string `json:"type"` // "summary"
		telemetry.Summary
	}
)

func (o jsonOutput) sample(s nvml.TelemetrySample, derived []nvml.Event) {
	o.write(jsonSample{"sample", s})
	for _, ev := range derived {
		o.event(ev)
	}
}

func (o jsonOutput) event(ev nvml.Event) { o.write(jsonEvent{"event", ev}) }

func (o jsonOutput) summary(s telemetry.Summary) { o.write(jsonSummary{"summary", s}) }

// write encodes one line; a value that cannot be encoded is a bug, and
// stdout failing ends the process with SIGPIPE on its own.
func (o jsonOutput) write(v any) {
	_ = o.enc.Encode(v)
}

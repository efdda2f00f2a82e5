package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// measurement is one create + start: its wall time and the API calls it
// made, by "METHOD /path pattern".
type measurement struct {
	wall  time.Duration
	calls map[string]int
}

func (m measurement) total() int {
	n := 0
	for _, c := range m.calls {
		n += c
	}
	return n
}

// taskPolls counts the task-status reads among the calls.
func (m measurement) taskPolls() int {
	n := 0
	for op, c := range m.calls {
		if strings.Contains(op, "/tasks/") && strings.HasSuffix(op, "/status") {
			n += c
		}
	}
	return n
}

func report(taskDuration time.Duration, ours, baseline string, results map[string][]measurement) {
	fmt.Printf("\nemulated task duration %s; per create + start (clone, configure, start) of a VM with one mapped GPU:\n\n", taskDuration)
	fmt.Println("| way | wall (each run) | API calls | of which task-status polls |")
	fmt.Println("|---|---|---|---|")
	median := map[string]time.Duration{}
	for _, name := range []string{ours, baseline} {
		var walls []string
		var ds []time.Duration
		for _, m := range results[name] {
			walls = append(walls, fmt.Sprintf("%.2f s", m.wall.Seconds()))
			ds = append(ds, m.wall)
		}
		slices.Sort(ds)
		median[name] = ds[len(ds)/2]
		last := results[name][len(results[name])-1]
		fmt.Printf("| %s | %s | %d | %d |\n", name, strings.Join(walls, ", "), last.total(), last.taskPolls())
	}
	fmt.Printf("\nmedian wall: %s %.2f s, %s %.2f s: %.1f× faster\n", ours, median[ours].Seconds(), baseline, median[baseline].Seconds(),
		median[baseline].Seconds()/median[ours].Seconds())
	fmt.Println("\ncalls of the last run, ours:")
	last := results[ours][len(results[ours])-1]
	for _, op := range slices.Sorted(maps.Keys(last.calls)) {
		fmt.Printf("  %3d %s\n", last.calls[op], op)
	}
}

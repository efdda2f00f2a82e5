package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// clusterWait is one "waited on the cluster" line of the provider's log.
type clusterWait struct {
	what, id       string
	started, ended time.Time
}

var logField = regexp.MustCompile(`(\w+)=("[^"]*"|\S+)`)

// parseClusterWaits reads the waits the provider logged (see
// internal/provider/common_wait_log.go).
func parseClusterWaits(path string) ([]clusterWait, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var waits []clusterWait
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, "waited on the cluster") {
			continue
		}
		fields := map[string]string{}
		for _, m := range logField.FindAllStringSubmatch(line, -1) {
			fields[m[1]] = strings.Trim(m[2], `"`)
		}
		started, err1 := time.Parse(time.RFC3339Nano, fields["started_at"])
		ended, err2 := time.Parse(time.RFC3339Nano, fields["ended_at"])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("unreadable wait line: %s", line)
		}
		waits = append(waits, clusterWait{what: fields["what"], id: fields["id"], started: started, ended: ended})
	}
	return waits, scanner.Err()
}

// waitingTime is the length of the union of the waits' intervals: the time
// during which the provider was waiting on the cluster for something.
func waitingTime(waits []clusterWait) time.Duration {
	sorted := append([]clusterWait(nil), waits...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].started.Before(sorted[j].started) })
	var total time.Duration
	var curStart, curEnd time.Time
	for i, w := range sorted {
		if i == 0 || w.started.After(curEnd) {
			total += curEnd.Sub(curStart)
			curStart, curEnd = w.started, w.ended
			continue
		}
		if w.ended.After(curEnd) {
			curEnd = w.ended
		}
	}
	return total + curEnd.Sub(curStart)
}

func report(wall time.Duration, applyStarted time.Time, waits []clusterWait, completions map[string]time.Time) {
	waiting := waitingTime(waits)
	fmt.Printf("\nwall time of terraform apply:  %s\n", wall.Round(time.Millisecond))
	if len(waits) > 0 {
		first, last := waits[0].started, waits[0].ended
		for _, w := range waits {
			if w.started.Before(first) {
				first = w.started
			}
			if w.ended.After(last) {
				last = w.ended
			}
		}
		fmt.Printf("  before the first wait:       %s (CLI start, plan, provider start, creating objects)\n", first.Sub(applyStarted).Round(time.Millisecond))
		fmt.Printf("  after the last wait:         %s (state writing, CLI exit)\n", applyStarted.Add(wall).Sub(last).Round(time.Millisecond))
	}
	fmt.Printf("waiting on the cluster:        %s (%.1f%% of wall)\n", waiting.Round(time.Millisecond), 100*waiting.Seconds()/wall.Seconds())
	fmt.Printf("terraform + provider overhead: %s (%.1f%% of wall)\n", (wall - waiting).Round(time.Millisecond), 100*(wall-waiting).Seconds()/wall.Seconds())

	var delays []time.Duration
	for _, w := range waits {
		if w.what != "job_completion" {
			continue
		}
		if seen, ok := completions[w.id]; ok {
			delays = append(delays, w.ended.Sub(seen))
		}
	}
	if len(delays) == 0 {
		fmt.Println("no job_completion waits matched a Job seen Complete")
		return
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	fmt.Printf("job Complete -> provider notices (%d jobs): median %s, max %s\n",
		len(delays), delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond))
	fmt.Println("(negative: the provider's watch saw the event before this process's watch)")
}

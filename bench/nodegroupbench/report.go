package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// result is one create: the apply's wall time, the delay from the last node
// advertising its GPUs to the apply returning, and the AWS calls it made.
type result struct {
	wall, notice time.Duration
	calls        map[string]int
}

func report(results []result) {
	fmt.Println()
	fmt.Println("| run | apply wall | last node allocatable → apply returned | AWS calls | by operation |")
	fmt.Println("|---|---|---|---|---|")
	for i, r := range results {
		total := 0
		var ops []string
		for _, op := range slices.Sorted(maps.Keys(r.calls)) {
			total += r.calls[op]
			ops = append(ops, fmt.Sprintf("%s %d", op, r.calls[op]))
		}
		fmt.Printf("| %d | %.2f s | %d ms | %d | %s |\n", i+1, r.wall.Seconds(), r.notice.Milliseconds(), total, strings.Join(ops, ", "))
	}
}

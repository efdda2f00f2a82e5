package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
)

// report prints the median of each variant and the ratios against kubectl.
func report(w io.Writer, results []result, nodes, pods int) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "\n%d GPU nodes, %d GPU pods; %d CPUs; load average %s", nodes, pods, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Fprintln(w, "\nmedian of each:")
	byVariant := map[string][]result{}
	var order []string
	for _, r := range results {
		if _, ok := byVariant[r.variant]; !ok {
			order = append(order, r.variant)
		}
		byVariant[r.variant] = append(byVariant[r.variant], r)
	}
	kubectl := median(byVariant["kubectl get nodes -o json"])
	for _, name := range order {
		m := median(byVariant[name])
		fmt.Fprintf(w, "  %s", m)
		if name != "kubectl get nodes -o json" && m.wall > 0 {
			fmt.Fprintf(w, "  kubectl/plan %.2fx", kubectl.wall.Seconds()/m.wall.Seconds())
		}
		fmt.Fprintln(w)
	}
}

// median is the run with the median wall time; its other figures are that run's.
func median(rs []result) result {
	if len(rs) == 0 {
		return result{}
	}
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int { return int(a.wall - b.wall) })
	m := s[len(s)/2]
	lo, hi := s[0].wall, s[len(s)-1].wall
	m.variant = fmt.Sprintf("%s [%.2f–%.2f s]", m.variant, lo.Seconds(), hi.Seconds())
	return m
}

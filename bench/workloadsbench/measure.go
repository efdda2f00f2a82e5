package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// result is what one terraform run cost.
type result struct {
	provider, what string
	wall           time.Duration
	// reads are the GET, LIST and WATCH requests the run added, by "VERB
	// resource".
	reads map[string]float64
	// watches is the most WATCH requests open at once beyond those open
	// before the run.
	watches float64
	// peakKiB is the largest VmHWM of the provider processes Terraform ran.
	peakKiB int64
}

// samplePeriod is how often open watches and the provider's memory are
// sampled during a run.
const samplePeriod = 50 * time.Millisecond

func measure(ctx context.Context, cluster *k8s.Cluster, tf terraformRun, args []string) (result, error) {
	before, err := scrape(ctx, cluster)
	if err != nil {
		return result{}, err
	}
	started := time.Now()
	cmd, out, err := tf.start(ctx, args)
	if err != nil {
		return result{}, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	r := result{}
	ticker := time.NewTicker(samplePeriod)
	defer ticker.Stop()
	for done := false; !done; {
		select {
		case err = <-waited:
			done = true
		case <-ticker.C:
			if m, err := scrape(ctx, cluster); err == nil {
				r.watches = max(r.watches, m.watches-before.watches)
			}
			r.peakKiB = max(r.peakKiB, providerHWM(cmd.Process.Pid))
		}
	}
	r.wall = time.Since(started)
	if err := finished(cmd, out, err); err != nil {
		return result{}, err
	}
	after, err := scrape(ctx, cluster)
	if err != nil {
		return result{}, err
	}
	r.reads = map[string]float64{}
	for k, v := range after.requests {
		if d := v - before.requests[k]; d > 0 {
			r.reads[k] = d
		}
	}
	return r, nil
}

// metrics is what a scrape of the API server's /metrics keeps.
type metrics struct {
	requests map[string]float64 // apiserver_request_total, GET/LIST/WATCH, by "VERB resource"
	watches  float64            // apiserver_longrunning_requests{verb="WATCH"}, summed
}

var (
	sampleLine = regexp.MustCompile(`^(\w+)\{([^}]*)\} (\S+)$`)
	labelPair  = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// scrape reads the API server's metrics (Prometheus text format:
// https://prometheus.io/docs/instrumenting/exposition_formats/); the
// metric names are kube-apiserver's
// (https://kubernetes.io/docs/reference/instrumentation/metrics/).
func scrape(ctx context.Context, cluster *k8s.Cluster) (metrics, error) {
	body, err := cluster.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return metrics{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	m := metrics{requests: map[string]float64{}}
	scanner := bufio.NewScanner(strings.NewReader(string(body)))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") && !strings.HasPrefix(line, "apiserver_longrunning_requests{") {
			continue
		}
		match := sampleLine.FindStringSubmatch(line)
		if match == nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(match[2], -1) {
			labels[p[1]] = p[2]
		}
		value, err := strconv.ParseFloat(match[3], 64)
		if err != nil {
			continue
		}
		switch match[1] {
		case "apiserver_request_total":
			if v := labels["verb"]; v == "GET" || v == "LIST" || v == "WATCH" {
				resource := labels["resource"]
				if labels["subresource"] != "" {
					resource += "/" + labels["subresource"]
				}
				m.requests[v+" "+resource] += value
			}
		case "apiserver_longrunning_requests":
			if labels["verb"] == "WATCH" {
				m.watches += value
			}
		}
	}
	return m, scanner.Err()
}

// providerHWM is the largest VmHWM (peak resident set, proc(5)) among the
// provider processes under terraform's pid, in KiB; 0 when none runs.
func providerHWM(terraformPID int) int64 {
	var peak int64
	children, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", terraformPID))
	for _, path := range children {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(data)) {
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			if !strings.HasPrefix(strings.TrimSpace(string(comm)), "terraform-provi") {
				continue
			}
			status, _ := os.ReadFile("/proc/" + pid + "/status")
			for _, line := range strings.Split(string(status), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
					kib, _ := strconv.ParseInt(f[1], 10, 64)
					peak = max(peak, kib)
				}
			}
		}
	}
	return peak
}

func total(reads map[string]float64) float64 {
	var n float64
	for _, v := range reads {
		n += v
	}
	return n
}

func report(r result, jobs int) {
	keys := make([]string, 0, len(r.reads))
	for k := range r.reads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, r.reads[k]))
	}
	fmt.Printf("%s, %s: wall %.2f s, reads %.0f (%.2f per Job), watches open at once +%.0f, provider peak %.1f MiB\n  %s\n",
		r.provider, r.what, r.wall.Seconds(), total(r.reads), total(r.reads)/float64(jobs), r.watches, float64(r.peakKiB)/1024, strings.Join(parts, ", "))
}

// summary prints a markdown table, the baseline's row above this tree's,
// and the ratios.
func summary(results []result) {
	fmt.Println("\n| run | provider | wall | reads (GET+LIST+WATCH) | watches open at once | provider peak RSS |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %s | %s | %.2f s | %.0f | +%.0f | %.1f MiB |\n", r.what, r.provider, r.wall.Seconds(), total(r.reads), r.watches, float64(r.peakKiB)/1024)
	}
	half := len(results) / 2
	for i := range half {
		b, c := results[i], results[half+i]
		fmt.Printf("%s: wall %.2fx, reads %.2fx, peak RSS %.2fx (this tree / baseline)\n", b.what,
			c.wall.Seconds()/b.wall.Seconds(), total(c.reads)/max(total(b.reads), 1), float64(c.peakKiB)/float64(max(b.peakKiB, 1)))
	}
}

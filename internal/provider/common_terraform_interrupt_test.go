package provider

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// interruptTerraformOnce presses Ctrl-C on the Terraform CLI the test runs
// (SIGINT to the terraform processes this test process started) at the
// first event of w that when accepts: one that shows the apply past its
// create and waiting. Terraform stops its provider, whose calls see their
// context canceled, and writes the state it got back. Call it from the
// step's PreConfig, so that the watch begins before the apply;
// interrupted says whether it pressed.
func interruptTerraformOnce(t *testing.T, w watch.Interface, when func(watch.Event) bool) (interrupted *atomic.Bool) {
	t.Helper()
	interrupted = new(atomic.Bool)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if !when(e) {
					continue
				}
				for _, pid := range terraformChildren() {
					if syscall.Kill(pid, syscall.SIGINT) == nil {
						interrupted.Store(true)
					}
				}
				return
			}
		}
	}()
	return interrupted
}

// cliNames are the process names of the CLIs the acceptance tests run
// under: Terraform, and OpenTofu (make testacc-tofu).
var cliNames = []string{"terraform", "tofu"}

// terraformChildren are the Terraform or OpenTofu processes whose parent is
// this test process (terraform-plugin-testing runs the CLI as a child).
func terraformChildren() []int {
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || !slices.Contains(cliNames, s[open+1:end]) {
			continue
		}
		pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
		ppid, err2 := strconv.Atoi(fields[1])
		if err1 == nil && err2 == nil && ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// InstallOptions say which testbed binaries Install builds and how.
type InstallOptions struct {
	// ToolsDir holds the kube, tofu and packer tools modules (each with
	// its go.mod).
	ToolsDir string
	// Only names sets ("demo", "test") or builds ("kube", "kwok",
	// "terraform", "tofu", "packer", "kube-oldest"); none means the test
	// set: everything.
	Only []string
	// Jobs is how many go commands run at once; 0 means DefaultJobs().
	Jobs int
	// Out gets the progress lines; Terminal redraws them in place.
	Out      io.Writer
	Terminal bool
}

// Install builds every selected testbed binary missing from the cache with
// the Go toolchain (see buildSteps). Binaries already present are not
// rebuilt. Each build holds a file lock on its cache directory, so two
// processes never build the same one at once, and goes to a temporary
// directory first, renamed into place, so a half-built binary is never taken
// for a present one. The go command's output goes to a log file under
// <cache>/logs; the user sees one progress line per build, and, when a build
// fails, the end of its log.
func Install(ctx context.Context, opts InstallOptions) error {
	root, err := CacheRoot()
	if err != nil {
		return err
	}
	toolsDir, err := filepath.Abs(opts.ToolsDir)
	if err != nil {
		return fmt.Errorf("resolving the tools directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(toolsDir, "kube", "go.mod")); err != nil {
		return fmt.Errorf("finding the Kubernetes tools module (pass --tools-dir): %w", err)
	}
	steps, err := selectSteps(buildSteps(root, toolsDir), opts.Only)
	if err != nil {
		return err
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs()
	}
	logDir := filepath.Join(root, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("creating the build log directory: %w", err)
	}

	lines := make([]progressLine, len(steps))
	for i, step := range steps {
		lines[i] = progressLine{
			title: fmt.Sprintf("%s (%s)", step.title, strings.Join(step.binaries, ", ")),
			dir:   step.dir,
			log:   filepath.Join(logDir, filepath.Base(step.dir)+".log"),
		}
		if step.present() {
			lines[i].state = statePresent
		}
	}
	if estimate := firstRunEstimate(steps); estimate != "" {
		fmt.Fprintln(opts.Out, estimate)
	}
	shown := newProgress(opts.Out, opts.Terminal, lines)
	for i := range lines {
		shown.set(i, lines[i].state, time.Now())
	}

	stopTicking := tickEverySecond(shown)
	errs := make([]error, len(steps))
	slots := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, step := range steps {
		if lines[i].state == statePresent {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = step.install(ctx, lines[i].log, func(state buildState) { shown.set(i, state, time.Now()) })
			if errs[i] != nil {
				shown.set(i, stateFailed, time.Now())
			}
		}()
	}
	wg.Wait()
	stopTicking()

	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(opts.Out, "\n%s failed; the end of %s:\n%s\n", steps[i].title, lines[i].log, logTail(lines[i].log, 25))
		}
	}
	return errors.Join(errs...)
}

// DefaultJobs is how many builds Install runs at once: two where there
// are two cores. Each go command already compiles on every core (-p
// defaults to GOMAXPROCS, `go help build`), but not while it resolves
// modules, downloads them or links a binary (one linker process, which for
// kube-apiserver takes a minute); a second build fills those gaps. More than
// two only multiplies memory. On 2 busy cores the demo set took 862 s this
// way (README.md, "First run"); one after another was not measured.
func DefaultJobs() int {
	return min(2, runtime.NumCPU())
}

// firstRunEstimate says how many binaries this run builds and about how
// long that takes on 2 cores; "" when all are present.
func firstRunEstimate(steps []buildStep) string {
	var names []string
	var total time.Duration
	for _, step := range steps {
		if step.present() {
			continue
		}
		names = append(names, step.binaries...)
		total += step.firstBuild
	}
	if len(names) == 0 {
		return ""
	}
	what := "this run builds"
	if len(names) == countBinaries(steps) {
		what = "first run builds"
	}
	return fmt.Sprintf("%s %d binaries (%s): about %d minutes on 2 cores (this machine has %d), once; later runs start in seconds",
		what, len(names), strings.Join(names, ", "), int(total.Round(time.Minute)/time.Minute), runtime.NumCPU())
}

func countBinaries(steps []buildStep) int {
	n := 0
	for _, step := range steps {
		n += len(step.binaries)
	}
	return n
}

// tickEverySecond redraws the progress lines every second until stopped.
func tickEverySecond(shown *progress) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-ticker.C:
				shown.tick(now)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// kubeVersionLDFlags stamps version the way Kubernetes' own build does,
// so /version and `kubectl version` report it rather than v0.0.0-master.
func kubeVersionLDFlags(version string) string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	values := map[string]string{
		"gitVersion":   version,
		"gitMajor":     major,
		"gitMinor":     minor,
		"gitTreeState": "clean",
	}
	flags := []string{"-s", "-w"}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, key := range []string{"gitVersion", "gitMajor", "gitMinor", "gitTreeState"} {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, key, values[key]))
		}
	}
	return strings.Join(flags, " ")
}

func (s buildStep) present() bool {
	for _, bin := range s.binaries {
		if !isExecutable(filepath.Join(s.dir, bin)) {
			return false
		}
	}
	return true
}

// install builds the step's binaries into its cache directory unless
// another process did while this one waited for the lock. The go command's
// output goes to logPath; report is told of each state.
func (s buildStep) install(ctx context.Context, logPath string, report func(buildState)) error {
	binRoot := filepath.Dir(s.dir)
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return fmt.Errorf("creating the cache directory: %w", err)
	}
	unlock, err := lockBuild(s.dir+".lock", func() { report(stateLocked) })
	if err != nil {
		return err
	}
	defer unlock()
	if s.present() {
		report(statePresent)
		return nil
	}

	// Same file system as the destination, so the final rename is atomic.
	staging, err := os.MkdirTemp(binRoot, ".building-")
	if err != nil {
		return fmt.Errorf("creating a build directory: %w", err)
	}
	defer os.RemoveAll(staging)
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the build log: %w", err)
	}
	defer log.Close()

	report(stateBuilding)
	fmt.Fprintf(log, "go %s\n", strings.Join(s.goArgs, " "))
	cmd := exec.CommandContext(ctx, "go", s.goArgs...)
	cmd.Env = append(os.Environ(), "GOBIN="+staging, "GOWORK=off")
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s (log: %s): %w", s.title, logPath, err)
	}

	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", s.dir, err)
	}
	for _, bin := range s.binaries {
		if err := os.Rename(filepath.Join(staging, bin), filepath.Join(s.dir, bin)); err != nil {
			return fmt.Errorf("moving %s into the cache: %w", bin, err)
		}
	}
	report(stateBuilt)
	return nil
}

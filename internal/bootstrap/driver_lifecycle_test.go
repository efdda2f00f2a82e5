package bootstrap

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// lifecycleToday is the day the lifecycle tests plan on: R535 and R570 are
// past their end of life, R580 and R620 are NVIDIA's long-term support
// branches and R595 its production branch.
var lifecycleToday = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func day(year int, month time.Month, d int) time.Time {
	return time.Date(year, month, d, 12, 0, 0, 0, time.UTC)
}

func TestLifecycleTableRows(t *testing.T) {
	want := map[int]struct {
		designation branchDesignation
		endOfLife   string // "" when none is published
		open, prop  bool
	}{
		535: {longTermSupportBranch, "June 2026", true, true},
		550: {productionBranch, "", true, true},
		560: {newFeatureBranch, "", true, true},
		565: {newFeatureBranch, "", true, true},
		570: {productionBranch, "February 2026", true, true},
		575: {newFeatureBranch, "", true, true},
		580: {longTermSupportBranch, "June 2028", true, true},
		590: {newFeatureBranch, "", true, true},
		595: {productionBranch, "March 2027", true, true},
		610: {newFeatureBranch, "August 2026", true, true},
		615: {newFeatureBranch, "", true, true},
		620: {longTermSupportBranch, "September 2029", true, false},
	}
	require.Len(t, driverBranches, len(want))
	for i, b := range driverBranches {
		w, ok := want[b.branch]
		require.True(t, ok, "branch %d is not expected", b.branch)
		if i > 0 {
			require.Less(t, driverBranches[i-1].branch, b.branch, "the table is oldest first")
		}
		require.Equal(t, w.designation, b.designation, "branch %d", b.branch)
		eol := ""
		if !b.endOfLife.isZero() {
			eol = b.endOfLife.String()
		}
		require.Equal(t, w.endOfLife, eol, "branch %d", b.branch)
		require.Equal(t, w.open, b.open, "branch %d open modules", b.branch)
		require.Equal(t, w.prop, b.proprietary, "branch %d proprietary modules", b.branch)
		require.Equal(t, b.branch <= 580, b.preTuring, "branch %d drives Maxwell to Volta", b.branch)
		require.NotEmpty(t, b.source, "branch %d cites its page", b.branch)
		require.False(t, b.released.isZero(), "branch %d has a release month", b.branch)
		if !b.endOfLife.isZero() {
			require.True(t, b.released.start().Before(b.endOfLife.start()), "branch %d is released before its end of life", b.branch)
		}
	}
	_, ok := lifecycleOf(470)
	require.False(t, ok, "470 is older than the table")
	b, ok := lifecycleOf(620)
	require.True(t, ok)
	require.Equal(t, "620 (long-term support, end of life September 2029)", b.describe())
}

func TestLifecycleEndOfLifeMonths(t *testing.T) {
	b535, _ := lifecycleOf(535)
	require.False(t, b535.pastEndOfLife(day(2026, time.June, 30)), "a branch is supported through its end-of-life month")
	require.True(t, b535.pastEndOfLife(day(2026, time.July, 1)))
	b590, _ := lifecycleOf(590)
	require.False(t, b590.pastEndOfLife(day(2026, time.February, 28)), "a new feature branch lives until the next branch")
	require.True(t, b590.pastEndOfLife(day(2026, time.March, 1)), "595 came out in March 2026")
	b550, _ := lifecycleOf(550)
	require.False(t, b550.pastEndOfLife(day(2025, time.July, 31)))
	require.True(t, b550.pastEndOfLife(day(2025, time.August, 1)), "NVIDIA's August 2025 edition lists 550 as ended")
}

func TestEndOfLifeWarning(t *testing.T) {
	for _, tc := range []struct {
		branch int
		today  time.Time
		want   string
	}{
		{535, lifecycleToday, "branch 535 reached its end of life in June 2026 and gets no more bug or security fixes; the nearest supported branch is 580 (long-term support, end of life June 2028)"},
		{570, lifecycleToday, "branch 570 reached its end of life in February 2026 and gets no more bug or security fixes; the nearest supported branch is 595 (production, end of life March 2027)"},
		{550, lifecycleToday, "branch 550 is past its end of life (NVIDIA lists it as ended by August 2025) and gets no more bug or security fixes; the nearest supported branch is 595 (production, end of life March 2027)"},
		{590, lifecycleToday, "branch 590 is a short-lived new feature branch, ended when branch 595 came out (March 2026) and gets no more bug or security fixes; the nearest supported branch is 595 (production, end of life March 2027)"},
		{610, lifecycleToday, "branch 610 reached its end of life in August 2026 and gets no more bug or security fixes; the nearest supported branch is 620 (long-term support, end of life September 2029)"},
		{615, lifecycleToday, "branch 615 is a short-lived new feature branch, ended when branch 620 came out (November 2026) and gets no more bug or security fixes; the nearest supported branch is 620 (long-term support, end of life September 2029)"},
		{615, day(2026, time.October, 31), ""},
		// In June 2025 580 was not out yet: 535 is still supported, 570's
		// nearest production branch is none, so the closest of any kind.
		{550, day(2025, time.September, 1), "branch 550 is past its end of life (NVIDIA lists it as ended by August 2025) and gets no more bug or security fixes; the nearest supported branch is 570 (production, end of life February 2026)"},
		{580, lifecycleToday, ""},
		{595, lifecycleToday, ""},
		{620, lifecycleToday, ""},
		{535, day(2026, time.June, 15), ""},
		{470, lifecycleToday, ""}, // not in the table: nothing to say
		{999, lifecycleToday, ""},
	} {
		require.Equal(t, tc.want, endOfLifeWarning(tc.branch, tc.today), "branch %d on %s", tc.branch, tc.today.Format("2006-01-02"))
	}
}

func TestDriverConfigResolve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		today  time.Time
		branch string
		note   string
	}{
		{"lts", lifecycleToday, "620", `driver.branch "lts" is branch 620 today (NVIDIA's newest long-term support branch, end of life September 2029)`},
		{"LTS", lifecycleToday, "620", `driver.branch "LTS" is branch 620 today (NVIDIA's newest long-term support branch, end of life September 2029)`},
		{"production", lifecycleToday, "595", `driver.branch "production" is branch 595 today (NVIDIA's newest production branch, end of life March 2027)`},
		{"lts", day(2026, time.August, 31), "580", `driver.branch "lts" is branch 580 today (NVIDIA's newest long-term support branch, end of life June 2028)`},
		// 620's first release NVIDIA's manifests show is 4 November 2026:
		// in October "lts" still means 580.
		{"lts", day(2026, time.October, 31), "580", `driver.branch "lts" is branch 580 today (NVIDIA's newest long-term support branch, end of life June 2028)`},
		{"lts", day(2026, time.November, 1), "620", `driver.branch "lts" is branch 620 today (NVIDIA's newest long-term support branch, end of life September 2029)`},
		{"lts", day(2025, time.June, 1), "535", `driver.branch "lts" is branch 535 today (NVIDIA's newest long-term support branch, end of life June 2026)`},
		{"production", day(2025, time.June, 1), "570", `driver.branch "production" is branch 570 today (NVIDIA's newest production branch, end of life February 2026)`},
		{"production", day(2026, time.February, 15), "570", `driver.branch "production" is branch 570 today (NVIDIA's newest production branch, end of life February 2026)`},
		{"580", lifecycleToday, "580", ""},
		{"535", lifecycleToday, "535", ""}, // a number stays, past its end of life or not
	} {
		got, note, err := DriverConfig{Branch: tc.name, KernelModules: "open"}.resolve(tc.today)
		require.NoError(t, err)
		require.Equal(t, tc.branch, got.Branch, "%q on %s", tc.name, tc.today.Format("2006-01-02"))
		require.Equal(t, "open", got.KernelModules, "the flavor stays")
		require.Equal(t, tc.note, note)
	}

	// Far past the table's newest branches: no production branch is
	// supported, and the error says what to do.
	_, _, err := DriverConfig{Branch: "production"}.resolve(day(2030, time.January, 1))
	var fe *FieldError
	require.True(t, errors.As(err, &fe), "err = %v", err)
	require.Equal(t, "driver.branch", fe.Field)
	require.Contains(t, fe.Problem, `"production" names no branch on 2030-01-01`)
	require.Contains(t, fe.Problem, `set driver.branch to a branch number such as "595", or use a newer gpu-bootstrap`)
}

func TestDriverConfigValidateMovingNames(t *testing.T) {
	for _, name := range []string{"lts", "LTS", "production", "Production"} {
		require.Empty(t, (&DriverConfig{Branch: name}).validate("driver"), name)
		require.Empty(t, (&DriverConfig{Branch: name, KernelModules: "proprietary"}).validate("driver"), "%s: the flavor is checked once the name is resolved", name)
	}
	errs := (&DriverConfig{Branch: "latest"}).validate("driver")
	require.Len(t, errs, 1)
	var fe *FieldError
	require.True(t, errors.As(errs[0], &fe))
	require.Equal(t, "driver.branch", fe.Field)
	require.Contains(t, fe.Problem, `"latest" is not a driver branch: give the three-digit major version, such as "580" or "595", or "lts" / "production"`)
}

// lifecyclePlan plans the driver step on a Debian 12 image root with an
// A100 on the bus and today fixed.
func lifecyclePlan(t *testing.T, cfg DriverConfig, today time.Time, gpus ...pciFunction) (Plan, error) {
	t.Helper()
	h, _ := osReleaseHost(t, "debian-12")
	h.Now = func() time.Time { return today }
	if len(gpus) == 0 {
		gpus = []pciFunction{a100}
	}
	h.GPUs = driverlessGPUs(t, gpus...)
	require.NoError(t, os.MkdirAll(h.Path("/lib/modules/6.1.0-28-amd64"), 0o755))
	return MakePlan(context.Background(), h, []Step{driverStep{cfg: cfg, arch: "amd64"}})
}

func TestDriverPlanWarnsAboutAnEndOfLifeBranch(t *testing.T) {
	plan, err := lifecyclePlan(t, DriverConfig{Branch: "535", KernelModules: "proprietary"}, lifecycleToday)
	require.NoError(t, err)
	require.Equal(t, []string{"branch 535 reached its end of life in June 2026 and gets no more bug or security fixes; the nearest supported branch is 580 (long-term support, end of life June 2028)"}, plan[0].Warnings)
	require.Empty(t, plan[0].Notes)
	require.NotEmpty(t, plan[0].Changes, "the install still goes ahead")
	require.Contains(t, plan[0].Changes[len(plan[0].Changes)-1].Summary, "branch 535")

	// The same branch before its end of life: no warning.
	plan, err = lifecyclePlan(t, DriverConfig{Branch: "535", KernelModules: "proprietary"}, day(2026, time.May, 1))
	require.NoError(t, err)
	require.Empty(t, plan[0].Warnings)

	plan, err = lifecyclePlan(t, DriverConfig{Branch: "580"}, lifecycleToday)
	require.NoError(t, err)
	require.Empty(t, plan[0].Warnings, "580 is supported until June 2028")
}

func TestDriverPlanResolvesMovingBranchNames(t *testing.T) {
	plan, err := lifecyclePlan(t, DriverConfig{Branch: "lts"}, lifecycleToday)
	require.NoError(t, err)
	require.Equal(t, []string{`driver.branch "lts" is branch 620 today (NVIDIA's newest long-term support branch, end of life September 2029)`}, plan[0].Notes)
	require.Empty(t, plan[0].Warnings)
	install := plan[0].Changes[len(plan[0].Changes)-1]
	require.Contains(t, install.Summary, "branch 620")
	require.NotContains(t, install.Summary, "lts")

	plan, err = lifecyclePlan(t, DriverConfig{Branch: "production"}, lifecycleToday)
	require.NoError(t, err)
	require.Equal(t, []string{`driver.branch "production" is branch 595 today (NVIDIA's newest production branch, end of life March 2027)`}, plan[0].Notes)
	require.Contains(t, plan[0].Changes[len(plan[0].Changes)-1].Summary, "branch 595")

	// A year and a half earlier the same config means other branches.
	plan, err = lifecyclePlan(t, DriverConfig{Branch: "lts"}, day(2025, time.June, 1))
	require.NoError(t, err)
	require.Equal(t, []string{`driver.branch "lts" is branch 535 today (NVIDIA's newest long-term support branch, end of life June 2026)`}, plan[0].Notes)
	require.Contains(t, plan[0].Changes[len(plan[0].Changes)-1].Summary, "branch 535")
}

func TestDriverPlanLifecycleErrors(t *testing.T) {
	v100 := pciFunction{address: "0000:3b:00.0", device: "1db4", class: "030200"}
	for _, tc := range []struct {
		description string
		cfg         DriverConfig
		gpus        []pciFunction
		field       string
		says        []string
	}{
		{
			"lts with proprietary modules: 620 ships none",
			DriverConfig{Branch: "lts", KernelModules: "proprietary"}, nil, "driver.kernel_modules",
			[]string{`driver.branch "lts" is branch 620 today`, "NVIDIA ships only the open kernel modules from branch 620 on", `set driver.kernel_modules to "open", or choose branch 615 or older (580 or older for GPUs older than Turing)`},
		},
		{
			"proprietary 620 named by number",
			DriverConfig{Branch: "620", KernelModules: "proprietary"}, nil, "driver.kernel_modules",
			[]string{"NVIDIA ships only the open kernel modules from branch 620 on"},
		},
		{
			"open modules on a V100",
			DriverConfig{Branch: "580"}, []pciFunction{v100}, "driver.kernel_modules",
			[]string{"older than Turing", `set driver.kernel_modules to "proprietary"`},
		},
		{
			"production on a V100: 595 no longer drives Volta",
			DriverConfig{Branch: "production", KernelModules: "proprietary"}, []pciFunction{v100}, "driver.branch",
			[]string{"branch 595 no longer drives it", `set driver.branch to "580" or older`},
		},
		{
			"lts on a V100",
			DriverConfig{Branch: "lts"}, []pciFunction{v100}, "driver.branch",
			[]string{"branch 620 no longer drives it"},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			plan, err := lifecyclePlan(t, tc.cfg, lifecycleToday, tc.gpus...)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "err = %v", err)
			require.Equal(t, tc.field, fe.Field)
			for _, s := range tc.says {
				require.Contains(t, fe.Problem, s)
			}
			for _, sp := range plan {
				require.Empty(t, sp.Changes, "nothing is installed")
			}
		})
	}
}

func TestVerifyWarnsAboutTheRunningBranch(t *testing.T) {
	snap := nvml.Snapshot{Driver: nvml.Driver{Loaded: true, Version: "535.261.03", CUDAVersion: "12.2"}}
	v := &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "535"}}, lifecycleToday)
	require.Empty(t, v.problems, "an end-of-life branch does not make the node unhealthy")
	require.Equal(t, []string{"driver 535.261.03: branch 535 reached its end of life in June 2026 and gets no more bug or security fixes; the nearest supported branch is 580 (long-term support, end of life June 2028)"}, v.warnings)
	health := v.health(snap.Driver.Version, 1)
	require.Equal(t, HealthHealthy, health.Status)
	require.Equal(t, v.warnings, health.Warnings)

	// "lts" is compared as the number it stands for today.
	v = &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "lts"}}, lifecycleToday)
	require.Equal(t, []string{`driver branch is 535 (535.261.03) but driver.branch is "lts", branch 620 today; run gpu-bootstrap apply and reboot`}, v.problems)

	snap.Driver.Version = "620.30.02"
	v = &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "lts"}}, lifecycleToday)
	require.Empty(t, v.problems)
	require.Empty(t, v.warnings)
	require.Contains(t, v.checks, `driver branch 620 as configured (driver.branch "lts")`)

	require.Empty(t, RunningDriverEndOfLife(nvml.Driver{Loaded: false}, lifecycleToday))
	require.True(t, strings.HasPrefix(RunningDriverEndOfLife(nvml.Driver{Loaded: true, Version: "570.195.03"}, lifecycleToday), "driver 570.195.03: branch 570 reached its end of life in February 2026"))
}

func TestVerifyShowsStepWarningsOnce(t *testing.T) {
	// The DGX A100 double runs 550.54.15; driver.branch 550 plans nothing
	// (the branch runs) but warns about its end of life, which check has
	// already said about the running driver: said once.
	h := verifyMachine{}.host(t)
	health := Verify(context.Background(), h, &Config{Driver: &DriverConfig{Branch: "550", KernelModules: "proprietary"}, Verify: VerifyConfig{ExpectGPUs: 8}})
	require.Equal(t, HealthHealthy, health.Status, "%+v", health)
	require.Equal(t, []string{"driver 550.54.15: branch 550 is past its end of life (NVIDIA lists it as ended by August 2025) and gets no more bug or security fixes; the nearest supported branch is 595 (production, end of life March 2027)"}, health.Warnings)

	// Another step's warning is shown under its name, and not as a problem.
	v := &verification{}
	v.checkSteps(context.Background(), h, []Step{warningStep{name: "runtime", warnings: []string{"two specs"}}})
	require.Equal(t, []string{"runtime: two specs"}, v.warnings)
	require.Empty(t, v.problems)
}

// TestAMovingNameThatMovedOnIsSaid: a node on "lts" that runs an unpackaged
// 550 (the DGX A100 double, a Debian 12 image with no driver package) is
// told that the name now means 620, that apply would move it, how to stay,
// and that packages beside a driver installed otherwise make two drivers.
func TestAMovingNameThatMovedOnIsSaid(t *testing.T) {
	h := verifyMachine{files: map[string]string{"/etc/os-release": "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n"}}.host(t)
	h.Now = func() time.Time { return lifecycleToday }
	require.NoError(t, os.MkdirAll(h.Path("/lib/modules/6.1.0-28-amd64"), 0o755))
	plan, err := MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "lts"}, arch: "amd64"}})
	require.NoError(t, err)
	require.Contains(t, plan[0].Warnings, `driver.branch "lts" now names branch 620, and this node runs 550.54.15 (branch 550): apply moves it to branch 620, which needs a reboot; set driver.branch to "550" to stay on the running branch`)
	require.Contains(t, strings.Join(plan[0].Warnings, "\n"), `driver 550.54.15 is running but no driver package of NVIDIA's CUDA repository is installed`)

	// A number, not a moving name: no "now names" warning, the
	// two-drivers warning stays.
	plan, err = MakePlan(context.Background(), h, []Step{driverStep{cfg: DriverConfig{Branch: "580"}, arch: "amd64"}})
	require.NoError(t, err)
	require.NotContains(t, strings.Join(plan[0].Warnings, "\n"), "now names")
	require.Contains(t, strings.Join(plan[0].Warnings, "\n"), "leaves two drivers on the node")
}

// TestCheckToleratesAMovingNameThatMovedOn: a node on "lts" running 580
// (still a supported long-term branch) the day 620 counts is behind, not
// broken: a warning, not a problem; an unsupported running branch stays a
// problem.
func TestCheckToleratesAMovingNameThatMovedOn(t *testing.T) {
	snap := nvml.Snapshot{Driver: nvml.Driver{Loaded: true, Version: "580.159.04", CUDAVersion: "13.0"}}
	v := &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "lts"}}, lifecycleToday)
	require.Empty(t, v.problems)
	require.True(t, v.driverBehind)
	require.Empty(t, v.warnings, "the driver step's plan says it (one home)")
	require.Equal(t, []string{"NVIDIA driver 580.159.04 loaded (CUDA 13.0)", `driver branch 580 (580.159.04), still a supported long-term support branch; driver.branch is "lts", branch 620 today (the driver step's warning says how to move or stay)`}, v.checks)

	// 580 is not a production branch: "production" asks for another kind.
	v = &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "production"}}, lifecycleToday)
	require.Len(t, v.problems, 1)
	require.False(t, v.driverBehind)

	// A number is a number: 580 asked as "620" is a problem.
	v = &verification{}
	v.checkDriver(snap, &Config{Driver: &DriverConfig{Branch: "620"}}, lifecycleToday)
	require.Len(t, v.problems, 1)
}

// TestCheckSaysAMovedNamesPendingMoveAsAWarning: with "lts" and a running,
// packaged-or-not 580 on the day 620 counts, the driver step's pending move
// does not make check unhealthy; with "620" named, it does.
func TestCheckSaysAMovedNamesPendingMoveAsAWarning(t *testing.T) {
	m := verifyMachine{
		files:  map[string]string{"/etc/os-release": "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n"},
		change: func(f *nvmltest.Fleet) { f.Server.DriverVersion = "580.159.04" },
	}
	h := m.host(t)
	h.Now = func() time.Time { return lifecycleToday }
	require.NoError(t, os.MkdirAll(h.Path("/lib/modules/6.1.0-28-amd64"), 0o755))

	health := Verify(context.Background(), h, &Config{Driver: &DriverConfig{Branch: "lts"}, Verify: VerifyConfig{ExpectGPUs: 8}})
	require.Equal(t, HealthHealthy, health.Status, "%+v", health)
	warnings := strings.Join(health.Warnings, "\n")
	require.Contains(t, warnings, `driver: driver.branch "lts" now names branch 620, and this node runs 580.159.04 (branch 580)`)
	require.Contains(t, warnings, "driver: not moved yet: add NVIDIA's CUDA apt repository for debian12")

	health = Verify(context.Background(), h, &Config{Driver: &DriverConfig{Branch: "620"}, Verify: VerifyConfig{ExpectGPUs: 8}})
	require.Equal(t, HealthUnhealthy, health.Status)
	require.Contains(t, strings.Join(health.Problems, "\n"), "driver: not configured: add NVIDIA's CUDA apt repository for debian12")
}

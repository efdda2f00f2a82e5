package bootstrap

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file is NVIDIA's data center driver branch lifecycle as a table, and
// what the driver step, check and inventory derive from it:
//
//   - a branch past its end of life is a plan warning (endOfLifeWarning)
//     naming the month and the nearest supported branch; the install still
//     goes ahead;
//   - driver.branch "lts" and "production" are moving names resolved at plan
//     time (DriverConfig.resolve): the newest branch of that designation
//     that was released by today and is not past its end of life;
//   - which kernel module flavors a branch ships and which GPUs they drive
//     (checkBranchFlavor, checkKernelModuleGPUs).
//
// Sources (NVIDIA's own pages, cited per row):
//
//	[620] docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
//	      "Table 2 CUDA and Drivers": R580 Long Term Support Branch, End of Life June 2028;
//	      R595 Production Branch, March 2027; R620 Long Term Support Branch, September 2029.
//	      "Only Long Term Support and Production branches are listed. New Feature Branches
//	      are short-lived and do not have an end-of-life date."
//	[615] docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-versions.html
//	      R535 Long Term Support Branch, June 2026; R580 Long Term Support Branch, June 2028;
//	      R595 Production Branch, March 2027; R610 New Feature Branch, August 2026.
//	[580] docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
//	      (the v580 edition, "Last updated on Aug 04, 2025"): R535 Long Term Support Branch,
//	      June 2026; R570 Production Branch, February 2026; R580 Long Term Support Branch,
//	      August 2028 (the later [615]/[620] editions say June 2028: the newest edition wins).
//	      "All other previous driver branches not listed in the table above (such as R575,
//	      R565, R560, R550, R525, R515, ...) are end of life."
//	[life] docs.nvidia.com/datacenter/tesla/drivers/driver-lifecycle.html: a Production
//	      Branch gets fixes "for up to 1 year", a Long Term Support Branch "during the 3
//	      years that they are supported"; a New Feature Branch is released about every
//	      quarter.
//	[guide] NVIDIA Driver Installation Guide, Recent Updates, "Proprietary Kernel Modules
//	      Removed": "The proprietary kernel modules have been removed. The open kernel
//	      modules are now the only kernel module flavor provided." The section is §4.1 of
//	      the Release 620 edition (docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/,
//	      Nov 09, 2026) and absent from the Release 615 edition (.../615/pdf/, Sep 09, 2026,
//	      whose Recent Updates has only "Version locking packages for Ubuntu / Debian"):
//	      so NVIDIA's repositories ship open modules only from 620. Ubuntu's own archive
//	      went earlier: its nvidia-driver-615 and nvidia-dkms-615 are transitional packages
//	      to the -open ones (packages.ubuntu.com), which the Ubuntu packaging says itself.
//	[kmod] docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html:
//	      "Starting in the 515 driver release series, two flavors": proprietary ("required
//	      for older GPUs from the Maxwell, Pascal, or Volta architectures") and open ("only
//	      for Turing and newer architectures").
//	[redist] developer.download.nvidia.com/compute/nvidia-driver/redist/redistrib_<version>.json,
//	      "release_date" of the earliest release of a branch found there: 590.48.01
//	      2025-12-22, 615.71.09 2026-09-09, 620.70.06 2026-11-04.
//	[arch] docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html:
//	      Maxwell, Pascal and Volta: Last Driver Support R580.
//
// Release months. NVIDIA's lifecycle pages give end-of-life months, not
// release months; the release month only keeps "lts" and "production" from
// naming a branch that was not out yet on the day of the plan. Where [redist]
// has the branch, its earliest release date found there (a later month than
// the real first release at worst, so a moving name never runs ahead of
// NVIDIA). chosen, elsewhere: for a Long Term Support or Production Branch
// with a published end of life, that end of life minus the support period
// of [life] (3 years, 1 year), which gives the months the branches came out
// in (R535 June 2023, R570 February 2025, R580 August 2025 from [580]'s
// "August 2028"); other rows say how their month was chosen.
//
// End of life. A branch is supported through its end-of-life month and
// past its end of life from the first day of the next month (chosen: NVIDIA
// names a month, not a day). R550, R560, R565 and R575 have no published
// month: [580] lists them as ended by August 2025, so they count as past
// their end of life from then on and the warning says "by August 2025". New
// Feature Branches without a published end of life ([620]: they are
// "short-lived") count as ended when the next branch is released (chosen:
// the next branch is what NVIDIA supports in their place).

// branchDesignation is NVIDIA's lifecycle class of a branch.
type branchDesignation int

const (
	newFeatureBranch branchDesignation = iota + 1
	productionBranch
	longTermSupportBranch
)

// String is the designation as the plan says it: "long-term support".
func (d branchDesignation) String() string {
	switch d {
	case newFeatureBranch:
		return "new feature"
	case productionBranch:
		return "production"
	case longTermSupportBranch:
		return "long-term support"
	}
	return "unknown"
}

// yearMonth is a calendar month; the zero value is "none".
type yearMonth struct {
	year  int
	month time.Month
}

func ym(year int, month time.Month) yearMonth { return yearMonth{year, month} }

func (m yearMonth) isZero() bool { return m.year == 0 }

// String is "June 2026".
func (m yearMonth) String() string { return fmt.Sprintf("%s %d", m.month, m.year) }

// start is the first instant of the month (UTC).
func (m yearMonth) start() time.Time { return time.Date(m.year, m.month, 1, 0, 0, 0, 0, time.UTC) }

// next is the month after m.
func (m yearMonth) next() yearMonth {
	if m.month == time.December {
		return yearMonth{m.year + 1, time.January}
	}
	return yearMonth{m.year, m.month + 1}
}

// reached reports whether today is in month m or later.
func (m yearMonth) reached(today time.Time) bool { return !today.UTC().Before(m.start()) }

// branchLifecycle is one row of the table.
type branchLifecycle struct {
	branch      int
	designation branchDesignation
	// released is the month the branch came out (see the file comment).
	released yearMonth
	// endOfLife is the published end-of-life month; zero when NVIDIA
	// published none (endedBy or the next branch decides then).
	endOfLife yearMonth
	// endedBy is the month of the edition that first lists the branch as
	// ended, when no month was published.
	endedBy yearMonth
	// open and proprietary are the kernel module flavors NVIDIA ships.
	open, proprietary bool
	// preTuring is whether the branch still drives Maxwell, Pascal and
	// Volta GPUs (with the proprietary modules).
	preTuring bool
	// source names the pages the row comes from.
	source string
}

// Kernel module facts that hold for every branch of the table.
const (
	// firstOpenBranch is the first branch with open GPU kernel modules
	// ([kmod]).
	firstOpenBranch = 515
	// firstOpenOnlyBranch is the first branch without proprietary kernel
	// modules ([guide]); lastProprietaryBranch the last one with them.
	firstOpenOnlyBranch   = 620
	lastProprietaryBranch = 615
	// lastPreTuringBranch is the last branch that drives Maxwell, Pascal
	// and Volta GPUs ([arch]).
	lastPreTuringBranch = 580
	// openModulesMinArchitecture is the oldest architecture the open
	// kernel modules drive ([kmod]).
	openModulesMinArchitecture = "Turing"
)

// driverBranches is every data center branch NVIDIA published from 535 on,
// oldest first.
var driverBranches = []branchLifecycle{
	{branch: 535, designation: longTermSupportBranch, released: ym(2023, time.June), endOfLife: ym(2026, time.June),
		source: "[580], [615]: R535 Long Term Support Branch, End of Life June 2026"},
	{branch: 550, designation: productionBranch, released: ym(2024, time.March), endedBy: ym(2025, time.August),
		// chosen: released March 2024, the month of CUDA 12.4, whose
		// release notes ask for driver >= 550.54.14. unsure: Production
		// Branch; NVIDIA's 550 edition of the Supported Drivers page is
		// not in the sources read, and only a third party's list (the
		// aks-gpu driver list: production 550 and 570, long-term 535)
		// says so. Only "production" before 2025 depends on it.
		source: "[580]: R550 end of life (listed among the ended branches)"},
	{branch: 560, designation: newFeatureBranch, released: ym(2024, time.August), endedBy: ym(2025, time.August),
		// chosen: released August 2024 (CUDA 12.6, driver >= 560.28.03).
		source: "[580]: R560 end of life"},
	{branch: 565, designation: newFeatureBranch, released: ym(2024, time.October), endedBy: ym(2025, time.August),
		// chosen: released October 2024 (565.57.01).
		source: "[580]: R565 end of life"},
	{branch: 570, designation: productionBranch, released: ym(2025, time.February), endOfLife: ym(2026, time.February),
		source: "[580]: R570 Production Branch, End of Life February 2026"},
	{branch: 575, designation: newFeatureBranch, released: ym(2025, time.May), endedBy: ym(2025, time.August),
		// chosen: released May 2025 (CUDA 12.9, driver >= 575.51.03).
		source: "[580]: R575 end of life"},
	{branch: 580, designation: longTermSupportBranch, released: ym(2025, time.August), endOfLife: ym(2028, time.June),
		source: "[620], [615]: R580 Long Term Support Branch, End of Life June 2028 ([580]: August 2028)"},
	{branch: 590, designation: newFeatureBranch, released: ym(2025, time.December),
		// Released December 2025 ([redist]: 590.48.01, 2025-12-22; the
		// Driver Installation Guide's r590 edition is dated 15 December
		// 2025). No end of life is published; it ended when 595 came out.
		source: "[620]: New Feature Branches are short-lived and have no end-of-life date"},
	{branch: 595, designation: productionBranch, released: ym(2026, time.March), endOfLife: ym(2027, time.March),
		source: "[620], [615]: R595 Production Branch, End of Life March 2027"},
	{branch: 610, designation: newFeatureBranch, released: ym(2026, time.May), endOfLife: ym(2026, time.August),
		// chosen: released May 2026: after 595 (March 2026), and a
		// quarter ([life]) before its August 2026 end of life.
		source: "[615]: R610 New Feature Branch, End of Life August 2026"},
	{branch: 615, designation: newFeatureBranch, released: ym(2026, time.September),
		// unsure: NVIDIA's 615 edition exists but its table does not list
		// 615 itself, and the 620 edition lists only long-term and
		// production branches; so a New Feature Branch. Released
		// September 2026 ([redist]: 615.71.09, 2026-09-09); ended when 620
		// came out.
		source: "[615], [620]: not listed among the long-term and production branches"},
	{branch: 620, designation: longTermSupportBranch, released: ym(2026, time.November), endOfLife: ym(2029, time.September),
		// Released November 2026 at the latest ([redist]: 620.70.06,
		// 2026-11-04); [life]'s 3 years before September 2029 would say
		// September 2026, which no release found confirms.
		source: "[620]: R620 Long Term Support Branch, End of Life September 2029; [guide]: open kernel modules only"},
}

func init() {
	for i := range driverBranches {
		b := &driverBranches[i]
		b.open = b.branch >= firstOpenBranch
		b.proprietary = b.branch < firstOpenOnlyBranch
		b.preTuring = b.branch <= lastPreTuringBranch
	}
	sort.Slice(driverBranches, func(i, j int) bool { return driverBranches[i].branch < driverBranches[j].branch })
}

// lifecycleOf is the table's row for branch; false for a branch the table
// does not know (older than 535, or newer than this gpu-bootstrap).
func lifecycleOf(branch int) (branchLifecycle, bool) {
	for _, b := range driverBranches {
		if b.branch == branch {
			return b, true
		}
	}
	return branchLifecycle{}, false
}

// endedFrom is the month from which the branch is past its end of life;
// zero while nothing says it ends.
func (b branchLifecycle) endedFrom() yearMonth {
	switch {
	case !b.endOfLife.isZero():
		return b.endOfLife.next()
	case !b.endedBy.isZero():
		return b.endedBy
	}
	if next, ok := b.successor(); ok {
		return next.released
	}
	return yearMonth{}
}

// successor is the next branch of the table.
func (b branchLifecycle) successor() (branchLifecycle, bool) {
	for _, n := range driverBranches {
		if n.branch > b.branch {
			return n, true
		}
	}
	return branchLifecycle{}, false
}

// pastEndOfLife reports whether the branch is past its end of life today.
func (b branchLifecycle) pastEndOfLife(today time.Time) bool {
	ended := b.endedFrom()
	return !ended.isZero() && ended.reached(today)
}

// supported reports whether the branch was released by today and is not
// past its end of life.
func (b branchLifecycle) supported(today time.Time) bool {
	return b.released.reached(today) && !b.pastEndOfLife(today)
}

// endOfLifeText is how a message names the end of life: "end of life June
// 2026", "no published end of life".
func (b branchLifecycle) endOfLifeText() string {
	if !b.endOfLife.isZero() {
		return "end of life " + b.endOfLife.String()
	}
	return "no published end of life"
}

// describe is "580 (long-term support, end of life June 2028)".
func (b branchLifecycle) describe() string {
	return fmt.Sprintf("%d (%s, %s)", b.branch, b.designation, b.endOfLifeText())
}

// endOfLifeWarning is the warning for a branch past its end of life on
// today, naming the month and the nearest supported branch; "" when the
// branch is supported or the table does not know it.
func endOfLifeWarning(branch int, today time.Time) string {
	b, ok := lifecycleOf(branch)
	if !ok || !b.pastEndOfLife(today) {
		return ""
	}
	var msg string
	switch {
	case !b.endOfLife.isZero():
		msg = fmt.Sprintf("branch %d reached its end of life in %s", branch, b.endOfLife)
	case !b.endedBy.isZero():
		msg = fmt.Sprintf("branch %d is past its end of life (NVIDIA lists it as ended by %s)", branch, b.endedBy)
	default:
		next, _ := b.successor()
		msg = fmt.Sprintf("branch %d is a short-lived new feature branch, ended when branch %d came out (%s)", branch, next.branch, next.released)
	}
	msg += " and gets no more bug or security fixes"
	if near, ok := nearestSupportedBranch(b, today); ok {
		msg += "; the nearest supported branch is " + near.describe()
	}
	return msg
}

// nearestSupportedBranch is the supported branch (released and not past its
// end of life on today) that replaces b: among the supported branches of
// b's designation the one closest in number; when none of that designation
// is supported, the closest supported branch of any designation; a tie goes
// to the newer branch. So 535 (long-term) on 2026-11-27 gives 580, 570
// (production) gives 595, 610 (new feature, none supported) gives 620.
func nearestSupportedBranch(b branchLifecycle, today time.Time) (branchLifecycle, bool) {
	pick := func(sameDesignation bool) (branchLifecycle, bool) {
		var best branchLifecycle
		found := false
		for _, c := range driverBranches {
			if c.branch == b.branch || !c.supported(today) || sameDesignation && c.designation != b.designation {
				continue
			}
			if !found || distance(c.branch, b.branch) <= distance(best.branch, b.branch) {
				best, found = c, true
			}
		}
		return best, found
	}
	if best, ok := pick(true); ok {
		return best, true
	}
	return pick(false)
}

func distance(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// Moving branch names: driver.branch "lts" and "production".
const (
	branchNameLTS        = "lts"
	branchNameProduction = "production"
)

// movingBranch is the designation a moving branch name stands for; false
// when name is not one (compared case-insensitively: "LTS" works too).
func movingBranch(name string) (branchDesignation, bool) {
	switch strings.ToLower(name) {
	case branchNameLTS:
		return longTermSupportBranch, true
	case branchNameProduction:
		return productionBranch, true
	}
	return 0, false
}

// newestSupported is the newest branch of designation d supported on today.
func newestSupported(d branchDesignation, today time.Time) (branchLifecycle, bool) {
	for i := len(driverBranches) - 1; i >= 0; i-- {
		if b := driverBranches[i]; b.designation == d && b.supported(today) {
			return b, true
		}
	}
	return branchLifecycle{}, false
}

// resolve turns a moving driver.branch ("lts", "production") into the
// branch it stands for on today, with the note the plan shows; a branch
// number comes back unchanged with no note. It fails when no branch of that
// designation is supported on today (a gpu-bootstrap older than NVIDIA's
// newest branches, or a clock far off).
func (c DriverConfig) resolve(today time.Time) (DriverConfig, string, error) {
	d, ok := movingBranch(c.Branch)
	if !ok {
		return c, "", nil
	}
	b, ok := newestSupported(d, today)
	if !ok {
		var newest branchLifecycle
		for _, row := range driverBranches {
			if row.designation == d {
				newest = row
			}
		}
		return c, "", fieldError("driver.branch", "%q names no branch on %s: the newest %s branch this gpu-bootstrap knows, %s, is not supported then; set driver.branch to a branch number such as %q, or use a newer gpu-bootstrap",
			c.Branch, today.UTC().Format("2006-01-02"), d, newest.describe(), fmt.Sprint(newest.branch))
	}
	note := fmt.Sprintf("driver.branch %q is branch %d today (NVIDIA's newest %s branch, %s)", c.Branch, b.branch, d, b.endOfLifeText())
	resolved := c
	resolved.Branch = fmt.Sprint(b.branch)
	return resolved, note, nil
}

// checkBranchFlavor is the error for a kernel module flavor the branch does
// not ship (field names driver.kernel_modules), nil when it ships it or the
// table does not know the branch (then only the open modules' first branch
// is checked).
func checkBranchFlavor(field string, c DriverConfig) error {
	n := c.branchNumber()
	if n == 0 {
		return nil
	}
	b, known := lifecycleOf(n)
	if !known {
		b = branchLifecycle{branch: n, open: n >= firstOpenBranch, proprietary: n < firstOpenOnlyBranch}
	}
	switch {
	case c.open() && !b.open:
		return fieldError(field, `branch %d has no open kernel modules (NVIDIA ships them from branch %d on): set %s to "proprietary" or choose a newer branch`, n, firstOpenBranch, field)
	case !c.open() && !b.proprietary:
		return fieldError(field, `NVIDIA ships only the open kernel modules from branch %d on: set %s to "open", or choose branch %d or older (%d or older for GPUs older than %s)`, firstOpenOnlyBranch, field, lastProprietaryBranch, lastPreTuringBranch, openModulesMinArchitecture)
	}
	return nil
}

// movedBranchWarning says that a moving driver.branch (name: "lts") now
// stands for another branch than the one the node runs, so this apply moves
// the node, and how to stay: a fleet on "lts" moves on the day NVIDIA's
// newer branch counts, not on a day anyone chose.
func movedBranchWarning(name, branch string, running nvml.Driver) string {
	return fmt.Sprintf("driver.branch %q now names branch %s, and this node runs %s (branch %s): apply moves it to branch %s, which needs a reboot; set driver.branch to %q to stay on the running branch",
		name, branch, running.Version, running.Branch(), branch, running.Branch())
}

// stillServes reports whether a running branch is still what a moving
// driver.branch name asks for: a supported branch of the name's designation
// ("lts": a long-term support branch), only not the newest.
func stillServes(running, name string, today time.Time) bool {
	d, moving := movingBranch(name)
	b, known := lifecycleOf(branchNumberOf(running))
	return moving && known && b.designation == d && b.supported(today)
}

package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// The driver step installs one NVIDIA driver branch with the distribution's
// package manager and pins it there, so an unattended upgrade never moves the
// node to another branch:
//
//   - Ubuntu: the headless "-server" packages of Ubuntu's own archive,
//     held with apt-mark (driver_debian_ubuntu.go), or NVIDIA's CUDA
//     repository pinned by nvidia-driver-pinning-<branch> when an apt
//     source of the node names it (driver_ubuntu_source.go);
//   - Debian 12 and 13: NVIDIA's CUDA apt repository, pinned with NVIDIA's
//     nvidia-driver-pinning-<branch> package (driver_debian.go);
//   - Amazon Linux 2023, RHEL 8/9 and rebuilds: NVIDIA's CUDA repository and
//     its nvidia-driver:<branch>-open / <branch>-dkms module streams, where
//     the enabled stream is the pin (driver_dnf.go); RHEL 10 and rebuilds:
//     the same repository locked with dnf versionlock
//     (driver_dnf_versionlock.go).
//
// A node already running the branch (NVML says so) gets no changes beyond a
// missing pin, and none at all on a system this step has no packaging for.
// Which GPUs the branch and kernel module flavor support is checked at plan
// time (driver_gpus.go).
//
// NVIDIA's branch lifecycle (driver_lifecycle.go) comes first in Plan: a
// moving driver.branch ("lts", "production") is resolved to today's number
// and the plan notes it; a branch past its end of life is a warning with the
// nearest supported branch, and the install goes ahead; a flavor the branch
// does not ship is an error.

// DriverConfig pins the NVIDIA driver branch.
type DriverConfig struct {
	// Branch is the driver's major version ("580", "595", "620"), or a
	// moving name resolved from NVIDIA's lifecycle table when the plan is
	// made (driver_lifecycle.go): "lts", NVIDIA's newest long-term support
	// branch, or "production", its newest production branch (either case).
	Branch        string `json:"branch"`
	KernelModules string `json:"kernel_modules,omitempty"` // "open" (default) or "proprietary"
}

// Kernel module flavors.
const (
	KernelModulesOpen        = "open"
	KernelModulesProprietary = "proprietary"
)

// flavor is KernelModules with its default.
func (c DriverConfig) flavor() string {
	if c.KernelModules == "" {
		return KernelModulesOpen
	}
	return c.KernelModules
}

func (c DriverConfig) open() bool { return c.flavor() == KernelModulesOpen }

// branchNumber is Branch as a number; 0 when it is not a branch.
func (c DriverConfig) branchNumber() int {
	if !branchPattern.MatchString(c.Branch) {
		return 0
	}
	n, _ := strconv.Atoi(c.Branch)
	return n
}

var (
	branchPattern      = regexp.MustCompile(`^[1-9][0-9]{2}$`)
	fullVersionPattern = regexp.MustCompile(`^([1-9][0-9]{2})\.[0-9]+(\.[0-9]+)?$`)
)

func (c *DriverConfig) validate(field string) []error {
	var errs []error
	branchField, modulesField := field+".branch", field+".kernel_modules"
	_, moving := movingBranch(c.Branch)
	switch {
	case c.Branch == "":
		errs = append(errs, fieldError(branchField, `is required: the driver branch to install, its major version such as "580" or "595", or "lts" / "production" for NVIDIA's newest long-term support / production branch`))
	case moving:
	case fullVersionPattern.MatchString(c.Branch):
		m := fullVersionPattern.FindStringSubmatch(c.Branch)
		errs = append(errs, fieldError(branchField, "%q is a full driver version: give only its branch, %q (the package manager keeps the branch up to date)", c.Branch, m[1]))
	case !branchPattern.MatchString(c.Branch):
		errs = append(errs, fieldError(branchField, `%q is not a driver branch: give the three-digit major version, such as "580" or "595", or "lts" / "production" for NVIDIA's newest long-term support / production branch`, c.Branch))
	}
	switch c.KernelModules {
	case "", KernelModulesOpen, KernelModulesProprietary:
	default:
		errs = append(errs, fieldError(modulesField, `%q is not a kernel module flavor: use "open" (Turing and newer GPUs) or "proprietary" (needed by Maxwell, Pascal and Volta GPUs)`, c.KernelModules))
		return errs
	}
	// A moving name is checked once it is resolved (driverStep.Plan).
	if err := checkBranchFlavor(modulesField, *c); err != nil {
		errs = append(errs, err)
	}
	return errs
}

type driverStep struct {
	cfg DriverConfig
	// arch is the GOARCH of the target; the binary's own by default (tests
	// set it so the repository URLs do not depend on the test machine).
	arch string
}

func newDriverStep(cfg DriverConfig) Step { return driverStep{cfg: cfg, arch: runtime.GOARCH} }

func (driverStep) Name() string { return "driver" }

// Plan compares the running driver (NVML) and the installed packages (the
// package database under Host.Root) with the configured branch and flavor.
func (s driverStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	if errs := s.cfg.validate("driver"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A moving driver.branch ("lts", "production") becomes today's number
	// first: everything below, packaging included, sees only the number.
	today := h.now()
	resolved, note, err := s.cfg.resolve(today)
	if err != nil {
		return nil, err
	}
	if note != "" {
		h.Note("%s", note)
		if err := checkBranchFlavor("driver.kernel_modules", resolved); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Problem = note + ": " + fe.Problem
			}
			return nil, err
		}
	}
	name := s.cfg.Branch
	s.cfg = resolved
	if warning := endOfLifeWarning(s.cfg.branchNumber(), today); warning != "" {
		h.Warn("%s", warning)
	}
	snap, err := h.Snapshot()
	if err != nil {
		return nil, err
	}
	if err := checkKernelModuleGPUs("driver.kernel_modules", s.cfg, snap); err != nil {
		return nil, err
	}
	running := snap.Driver.Loaded && snap.Driver.Version != ""
	branchRuns := running && snap.Driver.Branch() == s.cfg.Branch

	distro, err := readDistro(h)
	if err != nil {
		if branchRuns {
			// Nothing to install, and no package manager this step knows
			// to pin with (a Bottlerocket node, a test root): the host
			// runs the branch, which is the desired state.
			return nil, nil
		}
		return nil, err
	}
	live := h.live()
	kernel, err := targetKernel(h, live)
	if err != nil {
		return nil, err
	}
	pkg, err := s.packaging(ctx, h, distro, kernel)
	if err != nil {
		return nil, err
	}
	if running && !branchRuns {
		if note != "" {
			h.Warn("%s", movedBranchWarning(name, s.cfg.Branch, snap.Driver))
		}
		if pkg.holdsNoDriver() {
			h.Warn("driver %s is running but no driver package of %s is installed (a runfile's or the image's own driver?): installing branch %s's packages beside it leaves two drivers on the node, which NVIDIA's installation guide says to avoid; remove it first (a runfile's: nvidia-uninstall), or set driver.branch to %q to keep it",
				snap.Driver.Version, pkg.source, s.cfg.Branch, snap.Driver.Branch())
		}
	}

	var changes []Change
	switch {
	case pkg.own && branchRuns && pkg.noStack:
		// A driver this step did not install (an AMI's, a runfile's) is
		// left alone.
		return nil, nil
	case pkg.own:
		// The packaging judged the installed stack and planned the lock
		// and the move itself; a running driver of another branch stays
		// loaded until a reboot.
		changes = append(changes, pkg.planned...)
		if n := len(changes); n > 0 && !pkg.installed {
			install := &changes[n-1]
			if running && !branchRuns {
				install.Note = fmt.Sprintf("driver %s is running: reboot to load branch %s (a loaded kernel module cannot be swapped underneath its users)", snap.Driver.Version, s.cfg.Branch)
				install.Reboot = true
			} else if !live {
				install.Note = fmt.Sprintf("the NVIDIA %s driver (branch %s) loads when the image boots", s.cfg.flavor(), s.cfg.Branch)
			}
		}
		if branchRuns {
			return changes, nil
		}
	case branchRuns:
		// A driver this step did not install (an AMI's, a runfile's) is
		// left alone; its own packages get their pin.
		if !pkg.installed || pkg.pinned {
			return nil, nil
		}
		return []Change{pkg.pinChange(s.cfg)}, nil
	case !pkg.installed:
		changes = append(changes, pkg.setup...)
		if len(pkg.release) > 0 {
			changes = append(changes, Change{
				Summary: "release the hold on " + strings.Join(pkg.releasePackages, ", ") + " so branch " + s.cfg.Branch + " can replace them",
				Ops:     commandOps(pkg.release...),
			})
		}
		install := pkg.installChange(s.cfg)
		if running {
			install.Note = fmt.Sprintf("driver %s is running: reboot to load branch %s (a loaded kernel module cannot be swapped underneath its users)", snap.Driver.Version, s.cfg.Branch)
			install.Reboot = true
		} else if !live {
			install.Note = fmt.Sprintf("the NVIDIA %s driver (branch %s) loads when the image boots", s.cfg.flavor(), s.cfg.Branch)
		}
		changes = append(changes, install)
	case !pkg.pinned:
		changes = append(changes, pkg.pinChange(s.cfg))
	}

	switch {
	case running:
		if pkg.installed {
			// Installed earlier; only the reboot is missing. The change
			// stays in the plan until the machine runs the branch.
			changes = append(changes, Change{
				Summary: fmt.Sprintf("replace the running driver %s with branch %s (installed: %s)", snap.Driver.Version, s.cfg.Branch, pkg.installedVersion),
				Ops:     []Op{ActionOp(func(context.Context, *Host) error { return nil })},
				Note:    fmt.Sprintf("reboot to load driver branch %s; %s stays loaded until then", s.cfg.Branch, snap.Driver.Version),
				Reboot:  true,
			})
		}
	case live && strings.Contains(snap.Driver.Reason, "mismatch"):
		// An upgrade replaced the user-space library while the old kernel
		// module stays loaded: modprobe cannot fix that, a reboot does.
		changes = append(changes, Change{
			Summary: fmt.Sprintf("load driver branch %s in place of the kernel module still loaded (%s)", s.cfg.Branch, snap.Driver.Reason),
			Ops:     []Op{ActionOp(func(context.Context, *Host) error { return nil })},
			Note:    fmt.Sprintf("reboot to load driver branch %s", s.cfg.Branch),
			Reboot:  true,
		})
	case live:
		if load := loadChange(snap, s.cfg); load != nil {
			changes = append(changes, *load)
		}
	}
	return changes, nil
}

// loadChange loads the freshly installed kernel module on a running machine,
// or says why a reboot is needed instead; nil when there is no NVIDIA GPU to
// load it for (modprobe nvidia fails without one).
func loadChange(snap nvml.Snapshot, cfg DriverConfig) *Change {
	display := nvidiaDisplayFunctions(snap)
	if len(display) == 0 {
		return nil
	}
	for _, fn := range display {
		if fn.Driver == "nouveau" {
			return &Change{
				Summary: "load the NVIDIA kernel module after a reboot (nouveau drives " + fn.Address + " now)",
				Ops:     []Op{ActionOp(func(context.Context, *Host) error { return nil })},
				Note:    "reboot: the driver packages blacklist nouveau, and the nvidia module can only bind the GPUs once nouveau is gone",
				Reboot:  true,
			}
		}
	}
	return &Change{
		Summary: fmt.Sprintf("load the NVIDIA kernel module (branch %s, %s)", cfg.Branch, cfg.flavor()),
		Ops:     commandOps(Command{Root: "/", Name: "modprobe", Args: []string{"nvidia"}}),
	}
}

// holdsNoDriver reports whether no driver package of the packaging is
// installed, so a running driver came from elsewhere (a runfile, an image's
// own install): the packagings that judge the whole stack say so (noStack);
// for Ubuntu's archive, nothing installed and no stack to describe is the
// same.
func (p driverPackaging) holdsNoDriver() bool {
	return p.noStack || !p.own && !p.installed && p.stackNote == ""
}

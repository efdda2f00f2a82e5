package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The toolkit step installs the NVIDIA Container Toolkit: the packages that
// put nvidia-container-runtime (what the runtime step points the container
// engine at), nvidia-ctk and nvidia-cdi-hook (what the CDI spec's hooks run)
// into /usr/bin. It follows NVIDIA's "Installing the NVIDIA Container
// Toolkit" guide: NVIDIA's libnvidia-container repository, then the four
// packages nvidia-container-toolkit, nvidia-container-toolkit-base,
// libnvidia-container-tools and libnvidia-container1, at one version when
// toolkit.version pins it (toolkit_apt.go, toolkit_dnf.go).
//
// The repository is added on every system, also where the driver step has
// added NVIDIA's CUDA repository, which carries nvidia-container-toolkit as
// well (AWS's EKS AMI build installs it from cuda-amzn2023.repo): the
// libnvidia-container repository is the source NVIDIA's guide names, it
// keeps every release so any pin resolves, the toolkit step does not depend
// on a driver section being configured, and Ubuntu's driver comes from
// Ubuntu's archive, without a CUDA repository. Where both repositories are
// present, apt and dnf choose among the same NVIDIA packages: the pinned
// version, or the newest.
//
// A pin is kept by the plan, not by apt-mark hold or dnf versionlock: a
// toolkit an upgrade moved to another version is a change in the next `plan`
// (and a problem in `check`), and `apply` installs the pinned version again.
//
// The step supports the systems the driver step does (osrelease.go), so one
// node config works for both.

// ToolkitConfig asks for the NVIDIA Container Toolkit.
type ToolkitConfig struct {
	// Install installs the toolkit when it is missing.
	Install bool `json:"install"`
	// Version pins a release, "1.17.8" (the package release "-1" is
	// added, as NVIDIA's guide does) or "1.17.8-1"; empty takes the newest
	// and leaves an installed toolkit at whatever version it has.
	Version string `json:"version,omitempty"`
}

const (
	// toolkitRuntimeBinary is the runtime nvidia-container-toolkit-base
	// installs (packaging/debian/nvidia-container-toolkit-base.install in
	// NVIDIA/nvidia-container-toolkit) and the runtime step's default.
	toolkitRuntimeBinary = defaultNvidiaRuntimePath
	// toolkitPackage is the package whose version is the toolkit's: it
	// depends on exactly its own version of the other three.
	toolkitPackage = "nvidia-container-toolkit"
	// toolkitGPGKeyURL signs NVIDIA's libnvidia-container repository.
	toolkitGPGKeyURL = "https://nvidia.github.io/libnvidia-container/gpgkey"
)

// toolkitPackages are what NVIDIA's guide installs, in its order.
var toolkitPackages = []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}

// toolkitVersionPattern is a release, optionally with its package release.
var toolkitVersionPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+(-[1-9][0-9]*)?$`)

func (c *ToolkitConfig) validate(field string) []error {
	var errs []error
	if c.Version != "" && !toolkitVersionPattern.MatchString(c.Version) {
		hint := ""
		if trimmed := strings.TrimPrefix(c.Version, "v"); trimmed != c.Version && toolkitVersionPattern.MatchString(trimmed) {
			hint = fmt.Sprintf(" (write %q, without the v)", trimmed)
		}
		errs = append(errs, fieldError(field+".version", `%q is not a toolkit version%s: give a release as NVIDIA publishes it, such as "1.17.8" or "1.17.8-1" with the package release, or leave it out for the newest`, c.Version, hint))
	}
	if !c.Install && c.Version != "" {
		errs = append(errs, fieldError(field+".install", "is false, so %s.version %q would be ignored: set %s.install to true, or remove the %s section", field, c.Version, field, field))
	}
	return errs
}

// packageVersion is the pinned version as the package managers spell it,
// "1.17.8-1"; "" when unpinned.
func (c ToolkitConfig) packageVersion() string {
	if c.Version == "" || strings.Contains(c.Version, "-") {
		return c.Version
	}
	return c.Version + "-1"
}

// satisfiedBy reports whether an installed version ("1.17.8-1", with or
// without an epoch) is what the config asks for: any version when unpinned,
// the release (and the package release, when the pin names one) otherwise.
func (c ToolkitConfig) satisfiedBy(installed string) bool {
	if installed == "" {
		return false
	}
	if c.Version == "" {
		return true
	}
	if _, rest, found := strings.Cut(installed, ":"); found {
		installed = rest
	}
	if strings.Contains(c.Version, "-") {
		return installed == c.Version
	}
	release := installed
	if i := strings.LastIndex(installed, "-"); i >= 0 {
		release = installed[:i]
	}
	return release == c.Version
}

// toolkitPackaging is what one package manager needs to install the
// toolkit, and what its database says is there.
type toolkitPackaging struct {
	source    string   // "NVIDIA's libnvidia-container apt repository"
	setup     []Change // repository setup that is still missing
	installed string   // version of nvidia-container-toolkit; "" when not installed
	// install installs the packages (names or pinned specs).
	install func(specs []string, mode toolkitInstallMode) []Command
}

// toolkitInstallMode says what an install does to what is installed.
type toolkitInstallMode int

const (
	toolkitFresh     toolkitInstallMode = iota // nothing installed yet
	toolkitReplace                             // another version is installed: up or down to the pin
	toolkitReinstall                           // the right version, with files missing
)

type toolkitStep struct{ cfg ToolkitConfig }

func newToolkitStep(cfg ToolkitConfig) Step { return toolkitStep{cfg: cfg} }

func (toolkitStep) Name() string { return "toolkit" }

// Plan reads the package database under the root: no changes when
// nvidia-container-toolkit is installed at the pinned version (any version
// when unpinned) and its runtime binary is there.
func (s toolkitStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	if errs := s.cfg.validate("toolkit"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	binary := h.Exists(toolkitRuntimeBinary)
	distro, err := readDistro(h)
	if err != nil {
		if binary && s.cfg.Version == "" {
			// A toolkit is there, installed in a way this step cannot
			// read (Bottlerocket ships it in its image): nothing to do.
			return nil, nil
		}
		return nil, err
	}
	var pkg toolkitPackaging
	switch distro.Family {
	case familyDebian:
		pkg, err = aptToolkitPackaging(ctx, h)
	case familyAL2023, familyRHEL:
		pkg, err = dnfToolkitPackaging(ctx, h)
	default:
		return nil, &UnsupportedOSError{Release: distro.Release}
	}
	if err != nil {
		return nil, err
	}

	satisfied := s.cfg.satisfiedBy(pkg.installed)
	if satisfied && binary {
		return nil, nil
	}
	specs := s.specs(distro.Family)
	var install Change
	switch {
	case satisfied:
		// Installed at the right version, but its runtime is gone:
		// installing again would change nothing.
		install = Change{
			Summary: fmt.Sprintf("reinstall the NVIDIA Container Toolkit %s from %s: %s is missing", pkg.installed, pkg.source, toolkitRuntimeBinary),
			Ops:     commandOps(pkg.install(specs, toolkitReinstall)...),
		}
	case pkg.installed != "":
		install = Change{
			Summary: fmt.Sprintf("replace the NVIDIA Container Toolkit %s with %s from %s: %s", pkg.installed, s.cfg.packageVersion(), pkg.source, strings.Join(toolkitPackages, ", ")),
			Ops:     commandOps(pkg.install(specs, toolkitReplace)...),
		}
	default:
		install = Change{
			Summary: fmt.Sprintf("install the NVIDIA Container Toolkit %s from %s: %s", s.wanted(), pkg.source, strings.Join(toolkitPackages, ", ")),
			Ops:     commandOps(pkg.install(specs, toolkitFresh)...),
		}
	}
	return append(pkg.setup, install), nil
}

// wanted names the version being installed in summaries.
func (s toolkitStep) wanted() string {
	if s.cfg.Version == "" {
		return "(newest release)"
	}
	return s.cfg.packageVersion()
}

// specs are the packages to install, pinned the way the family's package
// manager spells a version: name=1.17.8-1 for apt, name-1.17.8-1 for dnf.
func (s toolkitStep) specs(family string) []string {
	v := s.cfg.packageVersion()
	if v == "" {
		return toolkitPackages
	}
	sep := "-"
	if family == familyDebian {
		sep = "="
	}
	specs := make([]string, len(toolkitPackages))
	for i, name := range toolkitPackages {
		specs[i] = name + sep + v
	}
	return specs
}

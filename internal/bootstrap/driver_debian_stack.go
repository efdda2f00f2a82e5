package bootstrap

import (
	"fmt"
	"sort"
	"strings"
)

// This file judges an apt system's NVIDIA driver by its installed stack —
// the driver, NVML library and kernel module packages and every other
// package built at the driver's version — read from dpkg's status, not by
// the metapackage the step installed: a metapackage's ">=" dependencies let
// apt install a newer branch's stack under it.

// aptStack is the installed driver stack.
type aptStack struct {
	names    aptDriverNames
	packages []dpkgPackage // installed stack packages, by name
	held     []string      // stack and pinning packages on hold
}

// readAptStack reads the stack from the dpkg status.
func readAptStack(status dpkgStatus, names aptDriverNames) aptStack {
	s := aptStack{names: names}
	for name, p := range status {
		if names.stackPackage(name) && p.Installed() {
			s.packages = append(s.packages, p)
		}
		if p.Held() && p.State != "not-installed" && (names.stackPackage(name) || pinningBranch(name) != "") {
			s.held = append(s.held, name)
		}
	}
	sort.Slice(s.packages, func(i, j int) bool { return s.packages[i].Name < s.packages[j].Name })
	sort.Strings(s.held)
	return s
}

// get is an installed stack package.
func (s aptStack) get(name string) (dpkgPackage, bool) {
	for _, p := range s.packages {
		if p.Name == name {
			return p, true
		}
	}
	return dpkgPackage{}, false
}

// empty reports whether no stack package is installed.
func (s aptStack) empty() bool { return len(s.packages) == 0 }

// branches are the branches of the installed stack packages, sorted.
func (s aptStack) branches() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range s.packages {
		if b := s.packageBranch(p); !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out
}

// packageBranch is the branch a stack package belongs to: its version's,
// or for a branch-named cuda-drivers-<branch>, the name's (its version is
// the branch's too).
func (s aptStack) packageBranch(p dpkgPackage) string {
	return branchOf(p.Version)
}

// offBranch are the installed stack packages not on the branch.
func (s aptStack) offBranch(branch string) []dpkgPackage {
	var out []dpkgPackage
	for _, p := range s.packages {
		if s.packageBranch(p) != branch {
			out = append(out, p)
		}
	}
	return out
}

// describe is the stack as plan shows it: "driver stack on branch 590
// (libnvidia-ml1 590.44.01-1, nvidia-kernel-open-dkms 590.44.01-1)", or
// "mixed driver stack: branch 550 (…), branch 590 (…)", naming the driver,
// NVML and kernel module packages (all packages of a branch when none of
// those is on it).
func (s aptStack) describe() string {
	if s.empty() {
		return "no driver stack installed"
	}
	key := map[string]bool{s.names.driver: true, s.names.nvml: true}
	for _, k := range s.names.kernel {
		key[k] = true
	}
	var parts []string
	for _, b := range s.branches() {
		var named, all []string
		for _, p := range s.packages {
			if s.packageBranch(p) != b {
				continue
			}
			all = append(all, p.Name+" "+p.Version)
			if key[p.Name] {
				named = append(named, p.Name+" "+p.Version)
			}
		}
		if len(named) == 0 {
			named = all
		}
		parts = append(parts, fmt.Sprintf("branch %s (%s)", b, strings.Join(named, ", ")))
	}
	if len(parts) == 1 {
		return "driver stack on " + parts[0]
	}
	return "mixed driver stack: " + strings.Join(parts, ", ")
}

// problems says what keeps the stack from being cfg's branch and flavor,
// empty when it is: packages off the branch, the flavor's kernel module,
// driver or NVML package missing, the other flavor's kernel module there.
func (s aptStack) problems(cfg DriverConfig) []string {
	var out []string
	if s.empty() {
		return []string{"no driver stack installed"}
	}
	if off := s.offBranch(cfg.Branch); len(off) > 0 {
		out = append(out, s.describe()+", asked "+cfg.Branch)
	}
	for _, name := range []string{s.names.kernel[cfg.flavor()], s.names.driver, s.names.nvml} {
		if _, ok := s.get(name); !ok {
			out = append(out, name+" is not installed")
		}
	}
	if _, ok := s.get(s.names.kernel[otherFlavor(cfg)]); ok {
		out = append(out, fmt.Sprintf("the %s kernel modules (%s) are installed, asked %s", otherFlavor(cfg), s.names.kernel[otherFlavor(cfg)], cfg.flavor()))
	}
	return out
}

// fingerprint is every installed stack package with its version.
func (s aptStack) fingerprint() string {
	var b strings.Builder
	for _, p := range s.packages {
		b.WriteString(p.Name + "=" + p.Version + " ")
	}
	return b.String()
}

package nvrepo

import (
	"slices"
	"strings"
	"testing"
)

// TestCUDAUbuntuNaming checks the model's names across the 590 rename:
// branch-named before it, unbranched from it, and no proprietary kernel
// modules in an open-only branch.
func TestCUDAUbuntuNaming(t *testing.T) {
	names := func(b CUDAUbuntuBranch) []string {
		pkgs, err := CUDAUbuntuDriverPackages("x86_64", b, b.Versions[0])
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pkgs {
			out = append(out, p.Name)
			if !strings.HasPrefix(p.Version, b.Branch+".") {
				t.Errorf("%s %s is not a version of branch %s", p.Name, p.Version, b.Branch)
			}
		}
		return out
	}
	b580 := names(CUDAUbuntuBranch{Branch: "580", Versions: []string{"580.95.05-1ubuntu1"}})
	for _, want := range []string{"libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-dkms-580", "nvidia-utils-580", "cuda-drivers-580", "nvidia-open-580", "cuda-drivers", "nvidia-open"} {
		if !slices.Contains(b580, want) {
			t.Errorf("580 lacks %s: %v", want, b580)
		}
	}
	b595 := names(CUDAUbuntuBranch{Branch: "595", Versions: []string{"595.71.05-1ubuntu1"}})
	for _, want := range []string{"libnvidia-compute", "nvidia-dkms-open", "nvidia-dkms", "nvidia-utils", "nvidia-driver-open", "cuda-drivers", "nvidia-open"} {
		if !slices.Contains(b595, want) {
			t.Errorf("595 lacks %s: %v", want, b595)
		}
	}
	for _, n := range b595 {
		if strings.Contains(n, "595") {
			t.Errorf("595 package %s carries the branch in its name", n)
		}
	}
	b620 := names(CUDAUbuntuBranch{Branch: "620", Versions: []string{"620.41.02-1ubuntu1"}, OpenOnly: true})
	for _, n := range []string{"nvidia-dkms", "nvidia-driver", "cuda-drivers"} {
		if slices.Contains(b620, n) {
			t.Errorf("open-only 620 has %s", n)
		}
	}
	if _, err := CUDAUbuntuDriverPackages("x86_64", CUDAUbuntuBranch{Branch: "595", Versions: []string{"580.95.05-1ubuntu1"}}, "580.95.05-1ubuntu1"); err == nil {
		t.Error("a 580 version accepted for branch 595")
	}
}

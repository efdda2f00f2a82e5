package nvdra

import (
	"fmt"
	"slices"
	"strings"
)

// MIGProfile is one GPU instance profile of a MIG-capable GPU, as NVML
// reports it (nvmlGpuInstanceProfileInfo_t, nvmlDeviceGetGpuInstancePossiblePlacements)
// and `nvidia-smi mig -lgip` / `-lgipp` print it.
type MIGProfile struct {
	Name       string // "1g.10gb", "1g.10gb+me": the profile attribute the plugin publishes
	ID         int    // the GPU instance profile ID (-lgip's ID column), part of the device name
	Slices     int    // memory slices one placement occupies (of 8)
	Placements []int  // possible placement starts, in memory slices
	Instances  int    // at most this many on one GPU (-lgip's Instances Total)

	MemoryMiB       int64 // memorySizeMB
	Multiprocessors int
	CopyEngines     int
	Decoders        int
	Encoders        int
	JPEGEngines     int
	OFAEngines      int
}

// migProfiles are the GPU instance profiles of the MIG-capable GPUs this
// project models, keyed by NVML product name, from NVIDIA's MIG user guide
// (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/, "Supported MIG
// Profiles" for the fractions and engines, and its `nvidia-smi mig -lgip`
// and `-lgipp` listings for IDs, memory and placements; placements are in
// memory slices, a GPU has eight). -lgip prints memory in GiB to two
// decimals; MemoryMiB is the multiple of 128 MiB it rounds (4.75 GiB = 4864
// MiB, 19.62 GiB = 20096 MiB). The A100 rows agree with the memorySizeMB
// NVIDIA's NVML mock records (NVIDIA/k8s-test-infra, profiles/mig/a100.yaml)
// and are those of R470 and later drivers (R450/R460 gave 2g.10gb 9984 and
// 3g.20gb 20096 MiB); the H100 1g.10gb's 9984 MiB is what nvidia-smi shows
// for such a MIG device. A100 80GB and H200 are not modeled: a MIG layout
// on them is refused.
var migProfiles = map[string][]MIGProfile{
	"NVIDIA A100-SXM4-40GB": {
		{Name: "1g.5gb", ID: 19, Slices: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Instances: 7, MemoryMiB: 4864, Multiprocessors: 14, CopyEngines: 1},
		{Name: "1g.5gb+me", ID: 20, Slices: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Instances: 1, MemoryMiB: 4864, Multiprocessors: 14, CopyEngines: 1, Decoders: 1, JPEGEngines: 1, OFAEngines: 1},
		{Name: "1g.10gb", ID: 15, Slices: 2, Placements: []int{0, 2, 4, 6}, Instances: 4, MemoryMiB: 9856, Multiprocessors: 14, CopyEngines: 1, Decoders: 1},
		{Name: "2g.10gb", ID: 14, Slices: 2, Placements: []int{0, 2, 4}, Instances: 3, MemoryMiB: 9856, Multiprocessors: 28, CopyEngines: 2, Decoders: 1},
		{Name: "3g.20gb", ID: 9, Slices: 4, Placements: []int{0, 4}, Instances: 2, MemoryMiB: 19968, Multiprocessors: 42, CopyEngines: 3, Decoders: 2},
		{Name: "4g.20gb", ID: 5, Slices: 4, Placements: []int{0}, Instances: 1, MemoryMiB: 19968, Multiprocessors: 56, CopyEngines: 4, Decoders: 2},
		{Name: "7g.40gb", ID: 0, Slices: 8, Placements: []int{0}, Instances: 1, MemoryMiB: 40192, Multiprocessors: 98, CopyEngines: 7, Decoders: 5, JPEGEngines: 1, OFAEngines: 1},
	},
	"NVIDIA H100 80GB HBM3": {
		{Name: "1g.10gb", ID: 19, Slices: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Instances: 7, MemoryMiB: 9984, Multiprocessors: 16, CopyEngines: 1, Decoders: 1, JPEGEngines: 1},
		{Name: "1g.10gb+me", ID: 20, Slices: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Instances: 1, MemoryMiB: 9984, Multiprocessors: 16, CopyEngines: 1, Decoders: 1, JPEGEngines: 1, OFAEngines: 1},
		{Name: "1g.20gb", ID: 15, Slices: 2, Placements: []int{0, 2, 4, 6}, Instances: 4, MemoryMiB: 20096, Multiprocessors: 26, CopyEngines: 1, Decoders: 1, JPEGEngines: 1},
		{Name: "2g.20gb", ID: 14, Slices: 2, Placements: []int{0, 2, 4}, Instances: 3, MemoryMiB: 20096, Multiprocessors: 32, CopyEngines: 2, Decoders: 2, JPEGEngines: 2},
		{Name: "3g.40gb", ID: 9, Slices: 4, Placements: []int{0, 4}, Instances: 2, MemoryMiB: 40448, Multiprocessors: 60, CopyEngines: 3, Decoders: 3, JPEGEngines: 3},
		{Name: "4g.40gb", ID: 5, Slices: 4, Placements: []int{0}, Instances: 1, MemoryMiB: 40448, Multiprocessors: 64, CopyEngines: 4, Decoders: 4, JPEGEngines: 4},
		{Name: "7g.80gb", ID: 0, Slices: 8, Placements: []int{0}, Instances: 1, MemoryMiB: 81152, Multiprocessors: 132, CopyEngines: 8, Decoders: 7, JPEGEngines: 7, OFAEngines: 1},
	},
}

// MIGProfiles returns the GPU instance profiles of the GPU of that NVML
// product name; false where this project has no table for it.
func MIGProfiles(productName string) ([]MIGProfile, bool) {
	p, ok := migProfiles[productName]
	return slices.Clone(p), ok
}

// MIGPlacement is a MIG device to create: its profile and the first memory
// slice it occupies.
type MIGPlacement struct {
	Profile MIGProfile
	Start   int
}

// PlaceMIGDevices lays out MIG devices of the named profiles on one GPU of
// productName, as mig-parted does for a layout that fits: each device at a
// placement of its profile, none overlapping, the earliest in the order
// given at the lowest start that still lets the rest fit. It errs naming a
// profile that is unknown or over its count, or the layout that does not
// fit.
func PlaceMIGDevices(productName string, profiles []string) ([]MIGPlacement, error) {
	table, ok := migProfiles[productName]
	if !ok {
		return nil, fmt.Errorf("no MIG profile table for %s (known: %s)", productName, strings.Join(migProducts(), ", "))
	}
	wanted := make([]MIGProfile, len(profiles))
	for i, name := range profiles {
		j := slices.IndexFunc(table, func(p MIGProfile) bool { return p.Name == name })
		if j < 0 {
			return nil, fmt.Errorf("%s has no MIG profile %q (profiles: %s)", productName, name, strings.Join(profileNames(table), ", "))
		}
		wanted[i] = table[j]
		if n := countNamed(profiles, name); n > wanted[i].Instances {
			return nil, fmt.Errorf("%s takes at most %d MIG devices of profile %s, not %d", productName, wanted[i].Instances, name, n)
		}
	}
	out := make([]MIGPlacement, len(wanted))
	var used [8]bool
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(wanted) {
			return true
		}
		p := wanted[i]
		for _, s := range p.Placements {
			if slices.Contains(used[s:s+p.Slices], true) {
				continue
			}
			for k := s; k < s+p.Slices; k++ {
				used[k] = true
			}
			out[i] = MIGPlacement{Profile: p, Start: s}
			if place(i + 1) {
				return true
			}
			for k := s; k < s+p.Slices; k++ {
				used[k] = false
			}
		}
		return false
	}
	if !place(0) {
		return nil, fmt.Errorf("MIG devices %s do not fit together on one %s", strings.Join(profiles, ", "), productName)
	}
	return out, nil
}

func migProducts() []string {
	var names []string
	for name := range migProfiles {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func profileNames(table []MIGProfile) []string {
	names := make([]string, len(table))
	for i, p := range table {
		names[i] = p.Name
	}
	return names
}

func countNamed(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

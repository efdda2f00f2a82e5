package gpuselect

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Preference orders GPUs that all satisfy a request.
type Preference string

const (
	// PreferIdle takes the least utilized GPUs with the most free memory.
	PreferIdle Preference = "idle"
	// PreferPacked takes the GPUs with the least free memory that fits, so
	// work is packed onto GPUs already in use and whole GPUs stay free.
	PreferPacked Preference = "packed"
)

// PreferenceInfo is a valid preference and what it does.
type PreferenceInfo struct {
	Name        Preference
	Description string
}

// Preferences lists the valid preferences, with what each does: flag help
// is written from it, and Validate accepts these and no other.
var Preferences = []PreferenceInfo{
	{PreferIdle, "least utilized, most free memory"},
	{PreferPacked, "least free memory that fits"},
}

// valid says whether p is one of Preferences.
func (p Preference) valid() bool {
	return slices.ContainsFunc(Preferences, func(info PreferenceInfo) bool { return info.Name == p })
}

// preferenceNames are Preferences' names, quoted: `"idle" or "packed"`.
func preferenceNames() string {
	names := make([]string, len(Preferences))
	for i, info := range Preferences {
		names[i] = strconv.Quote(string(info.Name))
	}
	return OrList(names)
}

// OrList joins items as a sentence does: "a", "a or b", "a, b or c".
func OrList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// Request is what the caller asks for.
type Request struct {
	Count int
	// MinFreeMiB is the free framebuffer memory each GPU must have.
	MinFreeMiB uint64
	// Product matches a GPU's name, case-insensitively, as a substring:
	// "H100" matches "NVIDIA H100 80GB HBM3". Empty matches every GPU.
	Product     string
	Prefer      Preference
	ExcludeBusy bool
	// BusyUtilization is the utilization in percent at or above which a
	// GPU counts as busy for ExcludeBusy.
	BusyUtilization uint32
}

// Validate says what is wrong with a request, naming the flag that sets it.
func (r Request) Validate() error {
	if r.Count < 1 {
		return fmt.Errorf("--count %d: ask for at least 1 GPU", r.Count)
	}
	if !r.Prefer.valid() {
		return fmt.Errorf("--prefer %q: use %s", r.Prefer, preferenceNames())
	}
	if r.BusyUtilization > 100 {
		return fmt.Errorf("--busy-utilization %d: a percentage, 0 to 100", r.BusyUtilization)
	}
	return nil
}

// memoryUnits are the suffixes ParseMemory takes, in bytes: IEC binary
// units as nvidia-smi and Kubernetes spell them, and SI decimal ones.
var memoryUnits = []struct {
	suffix string
	bytes  float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"B", 1},
}

// ParseMemory reads an amount of memory ("20GiB", "20Gi", "40GB", "512MiB",
// "1.5GiB", "0"; units in any case) and returns it in MiB, rounded up so
// that a GPU with the returned free MiB has at least the amount asked for.
// A bare "G" or "M" is refused rather than guessed: GiB and GB differ by 7%.
func ParseMemory(s string) (uint64, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return 0, fmt.Errorf("empty amount: write it with a unit, such as 20GiB or 512MiB")
	}
	number, unit := text, 0.0
	for _, u := range memoryUnits {
		if len(text) >= len(u.suffix) && strings.EqualFold(text[len(text)-len(u.suffix):], u.suffix) {
			number, unit = strings.TrimSpace(text[:len(text)-len(u.suffix)]), u.bytes
			break
		}
	}
	value, err := strconv.ParseFloat(number, 64)
	if err != nil || value < 0 || math.IsInf(value, 0) || math.IsNaN(value) {
		return 0, fmt.Errorf("%q is not an amount of memory: write a number and a unit, such as 20GiB, 40GB or 512MiB", s)
	}
	if unit == 0 {
		if value != 0 {
			return 0, fmt.Errorf("%q has no unit: write 20GiB, 40GB or 512MiB (bytes: 512B)", s)
		}
		return 0, nil
	}
	mib := math.Ceil(value * unit / (1 << 20))
	if mib > float64(math.MaxInt64) {
		return 0, fmt.Errorf("%q is more memory than any GPU has", s)
	}
	return uint64(mib), nil
}

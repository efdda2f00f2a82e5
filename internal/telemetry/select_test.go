package telemetry

import (
	"slices"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

func TestSelectGPUs(t *testing.T) {
	gpus := []nvml.GPUSample{a100(0), a100(1), a100(2)}
	tests := []struct {
		description string
		list        string
		want        []int
		wantErr     string
	}{
		{"an empty list is every GPU", "", []int{0, 1, 2}, ""},
		{"indices, in index order, each once", "2,0,2", []int{0, 2}, ""},
		{"a UUID and an index", "GPU-00000000-0000-4000-8000-000000000001, 0", []int{0, 1}, ""},
		{"UUIDs are matched without regard to case", "gpu-00000000-0000-4000-8000-000000000002", []int{2}, ""},
		{"an unknown index names it and lists what exists", "0,5", nil,
			`no GPU "5" on this machine; it has 0 (GPU-00000000-0000-4000-8000-000000000000), 1 (GPU-00000000-0000-4000-8000-000000000001), 2 (GPU-00000000-0000-4000-8000-000000000002)`},
		{"an unknown UUID names it", "GPU-nope", nil,
			`no GPU "GPU-nope" on this machine; it has 0 (GPU-00000000-0000-4000-8000-000000000000), 1 (GPU-00000000-0000-4000-8000-000000000001), 2 (GPU-00000000-0000-4000-8000-000000000002)`},
		{"only commas", ",", nil,
			`no GPU named in ","; this machine has 0 (GPU-00000000-0000-4000-8000-000000000000), 1 (GPU-00000000-0000-4000-8000-000000000001), 2 (GPU-00000000-0000-4000-8000-000000000002)`},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, err := SelectGPUs(tt.list, gpus)
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if errText != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("SelectGPUs(%q) = %v, %q; want %v, %q", tt.list, got, errText, tt.want, tt.wantErr)
			}
		})
	}
}

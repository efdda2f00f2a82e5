package ec2catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

func TestInstanceTypesMatchAWSAndFeatureDiscovery(t *testing.T) {
	tests := []struct {
		description  string
		instanceType string
		want         InstanceType
	}{
		{
			description:  "p5.48xlarge has eight H100 80GB HBM3 GPUs",
			instanceType: "p5.48xlarge",
			want: InstanceType{Name: "p5.48xlarge", CPU: "192", MemoryGi: 2048, GPUCount: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3",
				GPUMemoryMiB: 81559, Family: "hopper", ComputeMajor: 9, ComputeMinor: 0, MIGCapable: true,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "p4d.24xlarge has eight A100 SXM4 40GB GPUs",
			instanceType: "p4d.24xlarge",
			want: InstanceType{Name: "p4d.24xlarge", CPU: "96", MemoryGi: 1152, GPUCount: 8, GPUProduct: "NVIDIA-A100-SXM4-40GB",
				GPUMemoryMiB: 40960, Family: "ampere", ComputeMajor: 8, ComputeMinor: 0, MIGCapable: true,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "g5.xlarge has one A10G",
			instanceType: "g5.xlarge",
			want: InstanceType{Name: "g5.xlarge", CPU: "4", MemoryGi: 16, GPUCount: 1, GPUProduct: "NVIDIA-A10G",
				GPUMemoryMiB: 23028, Family: "ampere", ComputeMajor: 8, ComputeMinor: 6,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "g4dn.xlarge has one T4",
			instanceType: "g4dn.xlarge",
			want: InstanceType{Name: "g4dn.xlarge", CPU: "4", MemoryGi: 16, GPUCount: 1, GPUProduct: "Tesla-T4",
				GPUMemoryMiB: 15360, Family: "turing", ComputeMajor: 7, ComputeMinor: 5,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "m5.xlarge has no GPU",
			instanceType: "m5.xlarge",
			want:         InstanceType{Name: "m5.xlarge", CPU: "4", MemoryGi: 16},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, ok := Lookup(tt.instanceType)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLookupRejectsUnknownTypes(t *testing.T) {
	_, ok := Lookup("p99.mega")
	require.False(t, ok)
}

func TestEveryInstanceTypeIsConsistent(t *testing.T) {
	all := All()
	require.True(t, slices.IsSortedFunc(all, func(a, b InstanceType) int { return strings.Compare(a.Name, b.Name) }),
		"instance types are sorted by name")
	for _, p := range all {
		t.Run(p.Name, func(t *testing.T) {
			require.NotEmpty(t, p.CPU)
			require.Positive(t, p.MemoryGi)
			if !p.HasGPU() {
				require.Empty(t, p.GPUProduct)
				return
			}
			require.NotContains(t, p.GPUProduct, " ", "GFD replaces spaces in product names with dashes")
			require.Positive(t, p.GPUMemoryMiB)
			require.Equal(t, featureDiscoveryFamily(p.ComputeMajor, p.ComputeMinor), p.Family,
				"family follows from the compute capability as GFD derives it")
			if known, ok := gpulabels.KnownProducts[p.GPUProduct]; ok {
				require.Equal(t, known, gpulabels.ProductInfo{MemoryMiB: int64(p.GPUMemoryMiB), ComputeMajor: p.ComputeMajor, ComputeMinor: p.ComputeMinor},
					"the instance type agrees with gpulabels.KnownProducts")
			}
			require.Len(t, strings.Split(p.DriverVersion, "."), 3)
			require.Len(t, strings.Split(p.CUDAVersion, "."), 2)
		})
	}
}

func TestAllReturnsACopy(t *testing.T) {
	All()[0].GPUCount = 1000
	require.NotEqual(t, 1000, All()[0].GPUCount)
}

// featureDiscoveryFamily is GFD's mapping from compute capability to family
// for the architectures the instance types use.
func featureDiscoveryFamily(major, minor int) string {
	switch {
	case major == 7 && minor < 5:
		return "volta"
	case major == 7:
		return "turing"
	case major == 8:
		return "ampere"
	case major == 9:
		return "hopper"
	}
	return "undefined"
}

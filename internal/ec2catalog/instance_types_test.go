package ec2catalog

import (
	"slices"
	"strconv"
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
			want: InstanceType{Name: "p5.48xlarge", CPU: "192", MemoryGi: 2048, Architecture: "x86_64",
				EC2Accelerator: Accelerator{Info: "GpuInfo", Manufacturer: "NVIDIA", Name: "H100", Count: 8, MemoryMiB: 81920}, GPUCount: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3",
				GPUMemoryMiB: 81559, Family: "hopper", ComputeMajor: 9, ComputeMinor: 0, MIGCapable: true,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "p4d.24xlarge has eight A100 SXM4 40GB GPUs",
			instanceType: "p4d.24xlarge",
			want: InstanceType{Name: "p4d.24xlarge", CPU: "96", MemoryGi: 1152, Architecture: "x86_64",
				EC2Accelerator: Accelerator{Info: "GpuInfo", Manufacturer: "NVIDIA", Name: "A100", Count: 8, MemoryMiB: 40960}, GPUCount: 8, GPUProduct: "NVIDIA-A100-SXM4-40GB",
				GPUMemoryMiB: 40960, Family: "ampere", ComputeMajor: 8, ComputeMinor: 0, MIGCapable: true,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "g5.xlarge has one A10G",
			instanceType: "g5.xlarge",
			want: InstanceType{Name: "g5.xlarge", CPU: "4", MemoryGi: 16, Architecture: "x86_64",
				EC2Accelerator: Accelerator{Info: "GpuInfo", Manufacturer: "NVIDIA", Name: "A10G", Count: 1, MemoryMiB: 24576}, GPUCount: 1, GPUProduct: "NVIDIA-A10G",
				GPUMemoryMiB: 23028, Family: "ampere", ComputeMajor: 8, ComputeMinor: 6,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "g4dn.xlarge has one T4",
			instanceType: "g4dn.xlarge",
			want: InstanceType{Name: "g4dn.xlarge", CPU: "4", MemoryGi: 16, Architecture: "x86_64",
				EC2Accelerator: Accelerator{Info: "GpuInfo", Manufacturer: "NVIDIA", Name: "T4", Count: 1, MemoryMiB: 16384}, GPUCount: 1, GPUProduct: "Tesla-T4",
				GPUMemoryMiB: 15360, Family: "turing", ComputeMajor: 7, ComputeMinor: 5,
				DriverVersion: "550.54.15", CUDAVersion: "12.4"},
		},
		{
			description:  "t3.medium, EKS's default node type, has two vCPUs, 4 GiB and no GPU",
			instanceType: "t3.medium",
			want:         InstanceType{Name: "t3.medium", CPU: "2", MemoryGi: 4, Architecture: "x86_64"},
		},
		{
			description:  "m5.xlarge has no GPU",
			instanceType: "m5.xlarge",
			want:         InstanceType{Name: "m5.xlarge", CPU: "4", MemoryGi: 16, Architecture: "x86_64"},
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

// A few published values per family: vCPUs, memory, architecture and
// accelerators from AWS's instance type tables, and the GFD product.
func TestInstanceTypeFamiliesMatchAWSTables(t *testing.T) {
	tests := []struct {
		description  string
		instanceType string
		cpu          string
		memoryGi     int
		arch         string
		accelerator  Accelerator
		gpuProduct   string
	}{
		{"g4dn.metal has eight T4s", "g4dn.metal", "96", 384, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "T4", 8, 16384}, "Tesla-T4"},
		{"g4ad.xlarge has one AMD Radeon Pro V520", "g4ad.xlarge", "4", 16, "x86_64", Accelerator{"GpuInfo", "AMD", "Radeon Pro V520", 1, 8192}, ""},
		{"g4ad.16xlarge has four AMD Radeon Pro V520s", "g4ad.16xlarge", "64", 256, "x86_64", Accelerator{"GpuInfo", "AMD", "Radeon Pro V520", 4, 8192}, ""},
		{"g5.48xlarge has eight A10Gs", "g5.48xlarge", "192", 768, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "A10G", 8, 24576}, "NVIDIA-A10G"},
		{"g5g.xlarge is arm64 with one T4g", "g5g.xlarge", "4", 8, "arm64", Accelerator{"GpuInfo", "NVIDIA", "T4g", 1, 16384}, "NVIDIA-T4G"},
		{"g5g.16xlarge is arm64 with two T4gs", "g5g.16xlarge", "64", 128, "arm64", Accelerator{"GpuInfo", "NVIDIA", "T4g", 2, 16384}, "NVIDIA-T4G"},
		{"g6.xlarge has one L4", "g6.xlarge", "4", 16, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "L4", 1, 22888}, "NVIDIA-L4"},
		{"g6.48xlarge has eight L4s", "g6.48xlarge", "192", 768, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "L4", 8, 22888}, "NVIDIA-L4"},
		{"g6e.xlarge has one L40S and 32 GiB", "g6e.xlarge", "4", 32, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "L40S", 1, 45776}, "NVIDIA-L40S"},
		{"g6e.48xlarge has eight L40Ss", "g6e.48xlarge", "192", 1536, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "L40S", 8, 45776}, "NVIDIA-L40S"},
		{"gr6.4xlarge has one L4 and 128 GiB", "gr6.4xlarge", "16", 128, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "L4", 1, 22888}, "NVIDIA-L4"},
		{"p5.4xlarge has one H100 and 256 GiB", "p5.4xlarge", "16", 256, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "H100", 1, 81920}, "NVIDIA-H100-80GB-HBM3"},
		{"p3.2xlarge has one V100 and 61 GiB", "p3.2xlarge", "8", 61, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "V100", 1, 16384}, "Tesla-V100-SXM2-16GB"},
		{"p3.16xlarge has eight V100s", "p3.16xlarge", "64", 488, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "V100", 8, 16384}, "Tesla-V100-SXM2-16GB"},
		{"p4de.24xlarge has eight A100 80GB", "p4de.24xlarge", "96", 1152, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "A100", 8, 81920}, "NVIDIA-A100-SXM4-80GB"},
		{"p5e.48xlarge has eight H200s", "p5e.48xlarge", "192", 2048, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "H200", 8, 144384}, "NVIDIA-H200"},
		{"p5en.48xlarge has eight H200s", "p5en.48xlarge", "192", 2048, "x86_64", Accelerator{"GpuInfo", "NVIDIA", "H200", 8, 144384}, "NVIDIA-H200"},
		{"inf2.48xlarge has twelve Inferentia2", "inf2.48xlarge", "192", 768, "x86_64", Accelerator{"NeuronInfo", "AWS", "Inferentia2", 12, 32768}, ""},
		{"trn1.32xlarge has sixteen Trainium", "trn1.32xlarge", "128", 512, "x86_64", Accelerator{"NeuronInfo", "AWS", "Trainium", 16, 32768}, ""},
		{"dl1.24xlarge has eight Gaudi", "dl1.24xlarge", "96", 768, "x86_64", Accelerator{"GpuInfo", "Habana", "Gaudi HL-205", 8, 32768}, ""},
		{"m7g.large is arm64 without accelerators", "m7g.large", "2", 8, "arm64", Accelerator{}, ""},
		{"c6i.32xlarge has 128 vCPUs and 256 GiB", "c6i.32xlarge", "128", 256, "x86_64", Accelerator{}, ""},
		{"m6i.32xlarge has 128 vCPUs and 512 GiB", "m6i.32xlarge", "128", 512, "x86_64", Accelerator{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, ok := Lookup(tt.instanceType)
			require.True(t, ok)
			require.Equal(t, tt.cpu, got.CPU)
			require.Equal(t, tt.memoryGi, got.MemoryGi)
			require.Equal(t, tt.arch, got.Architecture)
			require.Equal(t, tt.accelerator, got.EC2Accelerator)
			require.Equal(t, tt.gpuProduct, got.GPUProduct)
		})
	}
}

func TestAcceleratorsSaysWhatATypeHas(t *testing.T) {
	tests := []struct {
		instanceType string
		want         string
	}{
		{"g4ad.xlarge", "AMD Radeon Pro V520 GPUs"},
		{"inf2.xlarge", "AWS Inferentia2 Neuron devices"},
		{"trn1.2xlarge", "AWS Trainium Neuron devices"},
		{"dl1.24xlarge", "Habana Gaudi HL-205 accelerators"},
		{"p5.48xlarge", "NVIDIA H100 GPUs"},
		{"m5.xlarge", "no accelerators"},
	}
	for _, tt := range tests {
		t.Run(tt.instanceType, func(t *testing.T) {
			got, ok := Lookup(tt.instanceType)
			require.True(t, ok)
			require.Equal(t, tt.want, got.Accelerators())
		})
	}
}

func TestCatalogCoversTheFamiliesUsersRun(t *testing.T) {
	families := map[string]bool{}
	for _, p := range All() {
		families[strings.SplitN(p.Name, ".", 2)[0]] = true
	}
	for _, family := range []string{"g4dn", "g5", "g5g", "g6", "g6e", "gr6", "p3", "p4d", "p4de", "p5", "p5e", "p5en",
		"g4ad", "inf2", "trn1", "dl1", "m5", "m6i", "c6i", "m7g"} {
		require.True(t, families[family], "family %s is in the catalog", family)
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
	require.Len(t, slices.CompactFunc(slices.Clone(all), func(a, b InstanceType) bool { return a.Name == b.Name }), len(all),
		"instance type names are unique")
	for _, p := range all {
		t.Run(p.Name, func(t *testing.T) {
			require.Regexp(t, `^[a-z0-9-]+\.[a-z0-9]+$`, p.Name)
			cpu, err := strconv.Atoi(p.CPU)
			require.NoError(t, err, "vCPUs are a whole number")
			require.Positive(t, cpu)
			require.Positive(t, p.MemoryGi)
			require.Contains(t, []string{ArchitectureX86_64, ArchitectureARM64}, p.Architecture)

			a := p.EC2Accelerator
			if a.Count == 0 {
				require.Equal(t, Accelerator{}, a, "a type without accelerators has no accelerator facts")
			} else {
				require.Contains(t, []string{AcceleratorInfoGPU, AcceleratorInfoNeuron}, a.Info)
				require.NotEmpty(t, a.Manufacturer)
				require.NotEmpty(t, a.Name)
				require.Positive(t, a.MemoryMiB)
			}
			if a.Manufacturer != ManufacturerNVIDIA {
				require.False(t, p.HasGPU(), "only NVIDIA GPUs count as GPUs")
				require.Zero(t, p.GPUCount)
				require.Empty(t, p.GPUProduct)
				require.Zero(t, p.GPUMemoryMiB)
				require.Empty(t, p.Family)
				require.Empty(t, p.DriverVersion)
				return
			}
			require.True(t, p.HasGPU())
			require.Equal(t, AcceleratorInfoGPU, a.Info)
			require.Equal(t, a.Count, p.GPUCount, "GFD counts the GPUs EC2 lists")
			require.NotEmpty(t, p.GPUProduct)
			require.NotContains(t, p.GPUProduct, " ", "GFD replaces spaces in product names with dashes")
			require.Positive(t, p.GPUMemoryMiB)
			require.Positive(t, p.ComputeMajor)
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

// Every type with the same GFD product has the same GPU facts.
func TestOneGPUProductHasOneSetOfFacts(t *testing.T) {
	seen := map[string]InstanceType{}
	for _, p := range All() {
		if !p.HasGPU() {
			continue
		}
		first, ok := seen[p.GPUProduct]
		if !ok {
			seen[p.GPUProduct] = p
			continue
		}
		require.Equal(t, []any{first.GPUMemoryMiB, first.Family, first.ComputeMajor, first.ComputeMinor, first.MIGCapable, first.EC2Accelerator.Name, first.EC2Accelerator.MemoryMiB},
			[]any{p.GPUMemoryMiB, p.Family, p.ComputeMajor, p.ComputeMinor, p.MIGCapable, p.EC2Accelerator.Name, p.EC2Accelerator.MemoryMiB},
			"%s and %s have the same GPU", first.Name, p.Name)
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
	case major == 8 && minor < 9:
		return "ampere"
	case major == 8:
		return "ada-lovelace"
	case major == 9:
		return "hopper"
	}
	return "undefined"
}

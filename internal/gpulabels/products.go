package gpulabels

// ProductInfo is what GPU Feature Discovery reports for one GPU model.
type ProductInfo struct {
	MemoryMiB    int64 // nvidia.com/gpu.memory: usable memory as NVML reports it
	ComputeMajor int
	ComputeMinor int
}

// KnownProducts are the nvidia.com/gpu.product values of common data-center
// GPUs with the memory and compute capability GFD labels them with. The
// memory is what NVML reports, which can be less than the marketing size
// (an "80GB" H100 reports 81559 MiB, 79.6 GiB). It is used to warn about
// requests no listed product can meet; a product missing here is never an
// error.
var KnownProducts = map[string]ProductInfo{
	"Tesla-T4":              {MemoryMiB: 15360, ComputeMajor: 7, ComputeMinor: 5},
	"NVIDIA-A10G":           {MemoryMiB: 23028, ComputeMajor: 8, ComputeMinor: 6},
	"NVIDIA-L4":             {MemoryMiB: 23034, ComputeMajor: 8, ComputeMinor: 9},
	"NVIDIA-L40S":           {MemoryMiB: 46068, ComputeMajor: 8, ComputeMinor: 9},
	"NVIDIA-A100-SXM4-40GB": {MemoryMiB: 40960, ComputeMajor: 8, ComputeMinor: 0},
	"NVIDIA-A100-SXM4-80GB": {MemoryMiB: 81920, ComputeMajor: 8, ComputeMinor: 0},
	"NVIDIA-H100-80GB-HBM3": {MemoryMiB: 81559, ComputeMajor: 9, ComputeMinor: 0},
}

// SharedProductSuffix is what GFD appends to nvidia.com/gpu.product on a
// node whose GPUs are shared (time-slicing or MPS) under renamed resources,
// e.g. "Tesla-T4-SHARED".
const SharedProductSuffix = "-SHARED"

// SharedResourceName is the resource the NVIDIA device plugin advertises for
// time-sliced or MPS-shared GPUs when it renames them (renameByDefault).
const SharedResourceName = "nvidia.com/gpu.shared"

// MIGResourcePrefix starts the resource name of a MIG profile under the
// "mixed" MIG strategy: "nvidia.com/mig-" + "1g.10gb".
const MIGResourcePrefix = "nvidia.com/mig-"

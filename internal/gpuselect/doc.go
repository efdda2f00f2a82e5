// Package gpuselect chooses GPUs on one machine for a container: the
// `gpu-bootstrap select` command. Given what NVML says about each GPU (free
// memory, current utilization, processes, product, MIG mode) and how the
// GPUs are linked, it picks the GPUs that satisfy a request and prints them
// in the form Docker, the NVIDIA container runtime and Compose take.
//
// It is pure logic over internal/nvml's types: it reads nothing itself, so
// every rule is tested on constructed machines. When no choice satisfies a
// request, the error says why for every GPU that was turned down.
//
// How a choice is made (Choose):
//
//  1. Each GPU is checked against the request: readable (not lost), not in
//     MIG mode (a MIG-enabled GPU's UUID cannot be handed to a container
//     whole), product, free memory, and with ExcludeBusy not busy (a compute
//     process on it, or utilization at or above BusyUtilization).
//  2. Among every set of Count qualifying GPUs, a set whose GPUs all reach
//     each other over NVLink wins over one that does not; then the set whose
//     slowest pair is best linked (NV<n> by n, then PIX, PXB, PHB, NODE,
//     SYS, as `nvidia-smi topo -m` ranks them); then the preference: "idle"
//     takes the least utilized GPUs with the most free memory (spreading
//     work), "packed" the GPUs with the least free memory that still fits
//     (keeping whole GPUs free for bigger jobs); then the lower indices.
package gpuselect

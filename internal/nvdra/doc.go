// Package nvdra holds the facts of NVIDIA's DRA driver for GPUs
// (kubernetes-sigs/dra-driver-nvidia-gpu, the gpu-kubelet-plugin) that both
// sides of this project need: the driver name, its DeviceClasses, and the
// attribute and capacity names it publishes in ResourceSlices. The testbed's
// DRA simulator publishes devices with these names, and the Kubernetes
// backend writes CEL selectors and counts devices with them, so a name is
// written here once.
//
// It also builds the devices themselves: GPU.Device and MIGDevice.Device
// return the resourceapi.Device the plugin's GpuInfo.GetDevice and
// MigDeviceInfo.GetDevice (cmd/gpu-kubelet-plugin/deviceinfo.go) return for
// the same NVML facts; GPUOf reads those facts from an EC2 instance type
// (internal/ec2catalog), and MIGProfiles / PlaceMIGDevices hold the MIG
// profile tables of the GPUs modeled (NVIDIA's MIG user guide).
//
// The version modeled is DriverVersion; each fact cites the driver source
// it was read from (cmd/gpu-kubelet-plugin/deviceinfo.go, nvlib.go, types.go,
// main.go and the Helm chart's deviceclass-*.yaml at that tag).
//
// v25.12.0 keeps this layout by default. What it changes: MIG device names
// gain the profile ("gpu-0-mig-1g10gb-19-0" instead of "gpu-0-mig-19-0-1"),
// MIG devices carry the standard resource.kubernetes.io/pciBusID instead of
// pcieBusID, GPUs gain an addressingMode attribute, and only behind its
// alpha DynamicMIG gate (off by default) does it publish the partitionable
// layout (KEP-4815: one slice of shared counters per node plus a slice of
// devices per GPU that consume them). The chart this project deploys is
// v25.8.1, so v25.8.1's single slice per node is what is modeled.
package nvdra

// Package nvdra holds the facts of NVIDIA's DRA driver for GPUs
// (kubernetes-sigs/dra-driver-nvidia-gpu, the gpu-kubelet-plugin) that both
// sides of this project need: the driver name, its DeviceClasses, and the
// attribute and capacity names it publishes in ResourceSlices. The testbed's
// DRA simulator publishes devices with these names, and the Kubernetes
// backend writes CEL selectors and counts devices with them, so a name is
// written here once.
//
// The version modelled is DriverVersion; each fact cites the driver source
// it was read from (cmd/gpu-kubelet-plugin/deviceinfo.go, types.go, main.go
// and the Helm chart's deviceclass-*.yaml at that tag).
package nvdra

package gpulabels

import (
	"regexp"
	"strings"
)

var productNameDrops = regexp.MustCompile("[^A-Za-z0-9-_. ]")

// ProductLabel is the nvidia.com/gpu.product value GPU Feature Discovery
// writes for a GPU whose NVML name is name ("NVIDIA H100 80GB HBM3" becomes
// "NVIDIA-H100-80GB-HBM3"): characters outside [A-Za-z0-9-_. ] dropped, runs
// of blanks turned into one dash. It is GFD's sanitize (k8s-device-plugin
// internal/lm/resource.go), so that a GPU published by NVIDIA's DRA driver
// (attribute productName, the NVML name) and the same GPU labeled by GFD
// have one product name.
func ProductLabel(name string) string {
	return strings.Join(strings.Fields(productNameDrops.ReplaceAllString(name, "")), "-")
}

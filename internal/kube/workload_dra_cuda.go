package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// A workload's least CUDA version is compared with the highest CUDA
// version each node's driver supports: on device-plugin nodes GPU Feature
// Discovery's nvidia.com/cuda.runtime-version.major / .minor labels (the
// "runtime" of its label names is the CUDA version the driver supports,
// as nvidia-smi shows it; nvidia.com/cuda.driver-version.* is the driver's
// own version, 550.54.15), on DRA nodes the driver's cudaDriverVersion
// attribute.

// NodeCUDAVersions reads the CUDA version GFD labels on each node that has
// one ("12.4"), from a metadata-only LIST of the nodes.
func (c *Cluster) NodeCUDAVersions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := forEachNodeMetadata(ctx, c.client, DefaultPageSize, func(n *metav1.PartialObjectMetadata) {
		major, minor := n.Labels[gpulabels.RuntimeVersionMajor], n.Labels[gpulabels.RuntimeVersionMinor]
		if major != "" && minor != "" {
			out[n.Name] = major + "." + minor
		}
	})
	return out, err
}

// DeviceCUDAVersions is the CUDA version each node's NVIDIA DRA devices
// publish ("12.8"), from the placement's facts.
func (f DRAFacts) DeviceCUDAVersions() map[string]string {
	out := map[string]string{}
	for _, d := range f.Devices {
		a, ok := d.Device.Attributes[nvdra.AttrCUDADriverVersion]
		if !ok || a.VersionValue == nil || d.Node == "" {
			continue
		}
		major, rest, _ := strings.Cut(*a.VersionValue, ".")
		minor, _, _ := strings.Cut(rest, ".")
		out[d.Node] = major + "." + minor
	}
	return out
}

// CUDAShortfall says that no node's driver supports CUDA least or newer,
// naming each node's version, e.g. "no node's NVIDIA driver supports CUDA
// 12.4 or newer: gpu-0 supports 12.2, gpu-1 supports 12.2"; "" when some
// node's does, or no node says (nothing to compare with).
func CUDAShortfall(versions map[string]string, least CUDAVersion) string {
	if len(versions) == 0 {
		return ""
	}
	nodes := make([]string, 0, len(versions))
	for node, v := range versions {
		if got, err := ParseCUDAVersion(v); err == nil && got.AtLeast(least) {
			return ""
		}
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		parts = append(parts, n+" supports "+versions[n])
	}
	return fmt.Sprintf("No node's NVIDIA driver supports CUDA %s or newer: %s", least, nameList(parts))
}

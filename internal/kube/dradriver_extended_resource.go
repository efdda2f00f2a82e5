package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// A DeviceClass's extendedResourceName lets a pod that asks for an
// extended resource (nvidia.com/gpu: 1, unchanged from the device plugin's
// days) get a device of the class through DRA. The field is behind the
// DRAExtendedResource feature gate of kube-apiserver and kube-scheduler:
// alpha and off in Kubernetes 1.34 and 1.35, beta and on in 1.36, GA in
// 1.37 (pkg/features/kube_features.go). An API server with the gate off
// drops the field on write without an error, so the write is read back.
//
// The scheduler gives a pod's extended resource to the device plugin on a
// node whose allocatable has it, and to DRA on a node whose allocatable
// has not (the noderesources and dynamicresources plugins): on a cluster
// with both, such a pod may land on either kind of node.

// ErrExtendedResourceDropped is the error of an API server that dropped a
// DeviceClass's extendedResourceName.
var ErrExtendedResourceDropped = errors.New("the API server dropped the DeviceClass's extendedResourceName")

// requireExtendedResourceKept reads the GPU DeviceClass back when spec
// maps an extended resource to it, and returns an error wrapping
// ErrExtendedResourceDropped, naming the cluster's version, when the
// field did not stay.
func (c *Cluster) requireExtendedResourceKept(ctx context.Context, spec DRADriverSpec) error {
	if spec.ExtendedResourceName == "" || !slices.Contains(spec.DeviceClasses, nvdra.DeviceClassGPU) {
		return nil
	}
	dc, err := c.client.ResourceV1().DeviceClasses().Get(ctx, nvdra.DeviceClassGPU, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading DeviceClass %s: %w", nvdra.DeviceClassGPU, err)
	}
	if dc.Spec.ExtendedResourceName != nil && *dc.Spec.ExtendedResourceName == spec.ExtendedResourceName {
		return nil
	}
	version, err := c.serverVersion(ctx)
	if err != nil {
		version = "(version unknown: " + err.Error() + ")"
	}
	return fmt.Errorf("mapping extended resource %s to DeviceClass %s: %w: the cluster runs Kubernetes %s, whose DRAExtendedResource "+
		"feature gate is off (alpha and off by default in 1.34 and 1.35, on by default from 1.36, GA in 1.37); turn it on in "+
		"kube-apiserver and kube-scheduler, or map no extended resource", spec.ExtendedResourceName, nvdra.DeviceClassGPU, ErrExtendedResourceDropped, version)
}

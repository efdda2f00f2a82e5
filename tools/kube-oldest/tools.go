//go:build tools

// Package kube pins the control plane of the oldest Kubernetes the provider
// supports (the oldest minor still in EKS standard support), which CI runs
// the Kubernetes acceptance tests against beside the newest in tools/kube.
// A module of its own so that the provider never depends on k8s.io/kubernetes.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)

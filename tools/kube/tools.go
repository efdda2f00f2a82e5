//go:build tools

// Package kube pins the Kubernetes control-plane binaries that the local GPU
// testbed runs (kube-apiserver, kube-controller-manager, kube-scheduler). It
// is a module of its own so that the provider never depends on k8s.io/kubernetes.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)

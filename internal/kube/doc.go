// Package kube turns the provider's `kubernetes` settings into a client-go
// client and answers the GPU questions the provider asks of a cluster: which
// nodes have NVIDIA GPUs, what kind, and how many are free.
//
// It must stay free of cgo and of go-nvml: the provider is released with
// CGO_ENABLED=0. It never shells out to kubectl.
package kube

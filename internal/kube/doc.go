// Package kube turns the provider's `kubernetes` settings into a client-go
// client and answers the GPU questions the provider asks of a cluster: which
// nodes have NVIDIA GPUs, what kind, and how many are free.
//
// It also deploys NVIDIA's device plugin (deviceplugin_*.go): a typed spec
// rendered into the plugin's config file and server-side apply
// configurations without contacting anything, then applied, read back,
// waited on (watches, never polling) and deleted.
//
// It must stay free of cgo and of go-nvml: the provider is released with
// CGO_ENABLED=0. It never shells out to kubectl.
package kube

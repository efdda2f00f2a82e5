// Package kube is the Kubernetes backend of the provider: every call the
// provider makes to a cluster goes through it, and internal/provider never
// imports client-go (golangci-lint's depguard holds that line).
//
// The provider connects once (Connection.Connect, from the `kubernetes`
// block's ConnectionSettings) and holds the resulting *Cluster. Each
// resource hands this package a typed spec built from its plan, and the
// package applies, reads, waits for and deletes what the spec describes:
//
//   - gpu_device_plugin: DevicePluginSpec (deviceplugin_*.go), rendered into
//     the plugin's config file and server-side apply configurations;
//   - gpu_workload: WorkloadSpec (workload_*.go), built into a Job or a
//     Deployment, read back into a spec for drift detection, and waited on
//     with a diagnosis of why its pods cannot schedule or keep failing;
//   - gpu_inventory: ListInventory, the GPU nodes and their free GPUs.
//
// Connection settings resolve (ConnectionSettings.Resolve) into a
// Connection that knows where each setting came from; its Cluster never
// sends credentials over plain HTTP without the opt-in, and explains a
// 401 or a TLS failure with the settings to fix (auth_*.go).
//
// Waits list, then follow watch events: no polling and no fixed sleeps.
// Each is bounded by its context and, through the Cluster, by how long the
// API server may stay unreachable (cluster_reachability.go); every HTTP
// request and every wait is logged at debug level with its duration, so
// TF_LOG=DEBUG shows where an apply spends its time.
//
// It must stay free of cgo and of go-nvml: the provider is released with
// CGO_ENABLED=0. It never shells out to kubectl, and it knows nothing of
// Terraform beyond the log lines: errors say what happened on the cluster,
// and the provider turns them into diagnostics naming attributes.
package kube

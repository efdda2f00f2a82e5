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
// Every operation is a method on *Cluster, and every resource's follow
// the backend contract shared with internal/eks and internal/proxmox
// (DESIGN.md, "The backend contract"):
//
//   - Read returns (T, found bool, error): an object that does not exist
//     is found == false, never an error (ReadDevicePlugin, ReadWorkload,
//     RefreshWorkload, FindWorkloadKind).
//   - Create returns (T, error), and a non-zero T means that something of
//     the create exists on the cluster: the provider keeps the resource
//     in its state, tainted when the error is non-nil, so that a destroy
//     or the next apply removes it (CreateDevicePlugin's
//     DevicePluginCreated, CreateWorkload's created). That holds when the
//     context ends part-way (Ctrl-C, timeouts.create) and when a create's
//     answer is lost after the API server acted (create_outcome.go): the
//     object is then found by its owner marker. A device plugin create
//     that fails deletes what it made instead, and is non-zero only when
//     that fails too. Waits come after the create, so a wait cut short
//     leaves a create that succeeded.
//   - Update and Delete bring the cluster to the spec or remove it; Delete
//     treats an object that is gone as deleted, and never touches one
//     another owner made (ownership.go).
//   - Waits are calls of this package too (WaitForDaemonSetRollout,
//     WaitForNodesAllocatable, WaitForWorkload, WaitForNodeGroup), bounded
//     by the context; the provider never loops on a read.
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

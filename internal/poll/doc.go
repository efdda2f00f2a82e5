// Package poll is how a backend waits on something it cannot watch: the
// cloud backends (internal/eks on EKS statuses, internal/proxmox on PVE
// tasks) check a remote status after growing intervals until it settles,
// fails, or the caller's context ends. It also owns the debug log lines
// that frame every wait of every backend (internal/kube's watches log
// through it too), so TF_LOG=DEBUG shows where an apply spends its time in
// one shape whichever backend it waits on.
//
// It must not know any backend: what is waited on, the schedule and the
// log's wording come from the caller. It never sleeps past its context.
package poll

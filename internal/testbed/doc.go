// Package testbed runs the local GPU testbed: the orchestrator that owns
// what every simulated system needs (a working directory, free loopback
// ports, a certificate authority, processes and in-process components, the
// state file of a detached testbed, the cache of built binaries) and starts
// one backend per simulated system. Each backend lives in a subpackage:
// testbed/k8s is a real Kubernetes control plane with kwok GPU nodes and
// the device-plugin simulator; testbed/awsemu emulates EKS, EC2, Auto
// Scaling and STS, with the EKS token webhook of the control plane; the
// Proxmox VE emulator comes next.
//
// # The backend contract
//
// A backend implements Backend: Name, Start(ctx, host) and Env. Start gets
// a *Host, the orchestrator's services for that backend: its own directory
// (<testbed dir>/<name>), the testbed CA to issue serving and client
// certificates from (every client verifies TLS against it), free loopback
// ports (recorded in the state by name), StartProcess for programs and Go
// for in-process components (the orchestrator watches, logs and stops
// both; a process that exits while the testbed starts fails the start with
// the end of its log). Backends start in the order given, so a later one
// may use an earlier one (the EC2 emulator registers nodes into the
// Kubernetes backend's cluster), and are stopped in reverse. A backend
// never stops anything itself: everything it started through its Host,
// Testbed.Stop (or State.Stop, for a detached testbed) stops. Env is what a
// client needs to reach the backend (KUBECONFIG, AWS_ENDPOINT_URL_EKS, ...):
// `gpu-testbed env` prints it from the state file. The orchestrator never
// imports a backend; whoever starts a testbed composes them:
//
//	cluster := k8s.New(k8s.Options{Nodes: nodes})
//	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{cluster}})
//
// Tests start one testbed per package with Main (or per test with
// StartForTest); humans start a long-lived one with `gpu-testbed up` (make
// demo), which is Detached: its processes outlive the command, and the
// state file in its directory lets `gpu-testbed env` and `down` find them.
// Each testbed picks its own free ports and directory, so several run side
// by side.
//
// The binaries are built from source by Install (make testbed) into a cache
// outside the clone, keyed by version; see Binaries for where they are
// looked up.
//
// Nothing here dials anything but 127.0.0.1.
package testbed

// Package testbed runs a local GPU testbed: a real Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) listening
// on loopback only, with kwok simulating the kubelets of NVIDIA GPU nodes
// that carry the labels, taint and nvidia.com/gpu capacity real ones have.
//
// Tests start one per package with Main (or per test with StartForTest);
// humans start a long-lived one with `gpu-testbed up` (make demo). Each
// testbed picks its own free ports and working directory, so several can run
// side by side, and it generates its own CA, serving and client certificates:
// every client verifies TLS.
//
// The binaries are built from source by Install (make testbed) into a cache
// outside the clone, keyed by version; see Binaries for where they are looked
// up.
//
// GPU nodes can also start without nvidia.com/gpu capacity
// (NodeSpec.WithoutGPUCapacity), as real ones do before NVIDIA's device
// plugin runs. The device-plugin simulator (RunDevicePluginSimulator, part
// of every testbed) then plays the kubelet's part: when a device-plugin pod
// runs on a node, the node advertises its GPUs (times the time-slicing
// replicas of the config the pod mounts); when the pod goes, allocatable
// drops to 0.
//
// What it does not do: run containers, route traffic to pod or service
// addresses (they are data only), or simulate GPUs below the Kubernetes API.
// Nothing here dials anything but 127.0.0.1.
package testbed

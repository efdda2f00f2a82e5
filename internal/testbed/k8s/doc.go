// Package k8s is the testbed's Kubernetes backend: a real control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) listening
// on loopback only, with kwok simulating the kubelets of NVIDIA GPU nodes
// that carry the labels, taint and nvidia.com/gpu capacity real ones have
// (from internal/ec2catalog, by EC2 instance type). Start it as one of
// testbed.Options.Backends (New); its Env is KUBECONFIG. Every component
// authenticates with a client certificate from the testbed's CA and
// verifies TLS.
//
// GPU nodes can also start without nvidia.com/gpu capacity
// (NodeSpec.WithoutGPUCapacity), as real ones do before NVIDIA's device
// plugin runs. The device-plugin simulator (RunDevicePluginSimulator, part
// of every cluster) then plays the kubelet's part: when a device-plugin pod
// runs on a node, the node advertises its GPUs (times the time-slicing
// replicas of the config the pod mounts); when the pod goes, allocatable
// drops to 0.
//
// What it does not do: run containers, route traffic to pod
// or service addresses (they are data only), or simulate GPUs below the
// Kubernetes API. Nothing here dials anything but 127.0.0.1.
package k8s

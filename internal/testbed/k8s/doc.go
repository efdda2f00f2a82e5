// Package k8s is the testbed's Kubernetes backend: a real control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) listening
// on loopback only, with kwok simulating the kubelets of NVIDIA GPU nodes
// that carry the labels, taint and nvidia.com/gpu capacity real ones have
// (from internal/ec2catalog, by EC2 instance type). Start it as one of
// testbed.Options.Backends (New); its Env is KUBECONFIG. Every component
// authenticates with a client certificate from the testbed's CA and
// verifies TLS.
//
// GPU nodes register without GPU Feature Discovery's labels, as real ones
// do (only the instance type tells), unless NodeSpec.GFDLabeled says GFD
// and NFD ran on them before; they can also start without nvidia.com/gpu
// capacity (NodeSpec.WithoutGPUCapacity), as real ones do before NVIDIA's
// device plugin runs, or with other GPU resources such as MIG profiles
// (NodeSpec.Resources). The device-plugin simulator (RunDevicePluginSimulator, part
// of every cluster) then plays the kubelet's part: when a device-plugin pod
// runs on a node, the node advertises its GPUs (times the time-slicing
// replicas of the config the pod mounts); when the pod goes, allocatable
// drops to 0. It also plays GPU Feature Discovery and Node Feature
// Discovery: GFD's labels appear on a node only while GFD, an NFD worker
// and an NFD master run as the real ones need (node_feature_simulator.go).
//
// # GPUs through DRA
//
// A GPU node can instead be a DRA node (NodeSpec.DRA, optionally with its
// GPUs in MIG mode: NodeSpec.MIGDevices): it registers without
// nvidia.com/gpu, and the DRA driver simulator (RunDRADriverSimulator, also
// part of every cluster, see RunSimulators) plays NVIDIA's
// gpu-kubelet-plugin: while the plugin's pod runs on the node, it
// publishes the node's GPUs or MIG devices as the plugin's ResourceSlices,
// and the real kube-scheduler allocates ResourceClaims from them
// (Cluster.StartDRADriver deploys the chart's DeviceClasses and plugin
// DaemonSet for tests that need no more of the driver). Device-plugin and
// DRA nodes can share one cluster. It reproduces no
// NodePrepareResources, CDI injection or device health; the comment above
// draDriverSimulator lists what else it leaves out.
//
// # Failing pods
//
// kwok runs no containers: a pod bound to a kwok node becomes Running and
// Ready, a Job's pod then Succeeds. A pod annotated with
// FailExitCodeAnnotation (and optionally FailMessageAnnotation) instead
// fails as the kubelet reports a container that exits with that code:
//
//   - restartPolicy Never (a Job's pods): the pod goes to phase Failed,
//     every container terminated with reason "Error", the exit code and the
//     message (state.terminated.message, which the kubelet fills from
//     terminationMessagePath). kube-controller-manager's Job controller
//     replaces failed pods with back-off and fails the Job with reason
//     BackoffLimitExceeded past its backoffLimit.
//   - restartPolicy Always (a Deployment's pods) or OnFailure: the pod
//     crash-loops. It stays Running but never Ready (Ready and
//     ContainersReady False, reason ContainersNotReady), every container
//     waiting with reason "CrashLoopBackOff" and the kubelet's back-off
//     message, restartCount counting restarts and lastState.terminated
//     holding reason "Error", the exit code and the message. Restarts follow
//     the kubelet's back-off (10 s, doubling, at most 5 min); a Job with
//     restartPolicy OnFailure fails with BackoffLimitExceeded once they
//     reach its backoffLimit.
//
// What it does not reproduce: a container that runs for a while before it
// exits (the pod fails as soon as kwok sees it, never Ready), one container
// failing while the others run (all of them exit alike), reasons other
// than "Error" (OOMKilled, ContainerCannotRun), image pull errors, probes,
// the back-off reset after 10 minutes of running, and the events the
// kubelet records.
//
// What the cluster does not do at all: run containers, route traffic to pod
// or service addresses (they are data only), or simulate GPUs below the
// Kubernetes API. Nothing here dials anything but 127.0.0.1.
package k8s

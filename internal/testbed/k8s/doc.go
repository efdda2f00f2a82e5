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
// # GPU health
//
// The health-agent simulator (RunHealthAgentSimulator, part of every
// cluster through RunSimulators) stands in for the kubelet running
// gpu-bootstrap's health-agent DaemonSet pod (a container whose args are
// `health-agent [flags]`, gpuhealth.ParseArgs) and for the node's GPUs:
// while such a pod is Running on a node, the real agent
// (healthagent.Run) runs in the simulator's process for that node, with
// the pod's flags, the simulator's client (system:masters: the pod's
// service account and its RBAC are not exercised) and internal/nvml's
// telemetry over an NVML double of the node (nvmltest: a DGX A100 cut to
// the node's GPU count, from nvidia.com/gpu.count, else its nvidia.com/gpu
// capacity, else its instance type; at most 8 GPUs, A100s whatever the
// instance type says; a node without GPUs gets a driver that is not
// loaded). The command's /metrics and /healthz (--listen) are not
// served. The double's energy counters grow while the agent runs, as a
// working GPU's do. The agent stops when its pod stops
// running or goes; the double lives as long as the node's boot: a new
// status.nodeInfo.bootID (a reboot, as the AWS emulator's node repair
// writes it) gives the node fresh, healthy GPUs and restarts its agent,
// and a deleted node drops its double.
//
// Faults reach the double through the API server, so that tests, a
// detached testbed (`gpu-testbed gpu-fault`) and kubectl play them alike:
// a request is a node annotation gpu-fault.testbed.gpuinfra.io/<id> whose
// value is a GPUFault in JSON ({"gpu":3,"xid":79}, {"gpu":3,"lose":true},
// {"gpu":3,"recover":true}, {"gpu":3,"ecc_uncorrected":1}); the simulator
// plays it once and removes it, or answers why not in
// gpu-fault-error.testbed.gpuinfra.io/<id> (no agent runs there, no such
// GPU). Cluster.FireXID, LoseGPU, RecoverGPU and AddECCErrors, and
// RequestGPUFault for a detached testbed, make the request and wait for
// the answer; they refuse a node where no agent pod runs. An XID is an
// NVML event on the GPU (XID 79 also makes the GPU lost, as the driver
// does); a lost GPU answers ERROR_GPU_IS_LOST; a recovery is a GPU reset
// (the GPU answers again, volatile ECC and energy counters start from 0);
// ECC errors add to the counters and fire their NVML events.
//
// A fatal fault (a critical XID, gpuhealth.CriticalXID; a lost GPU; an
// uncorrectable ECC error) also kills the node's GPU work: every pod
// Running on the node that asks for an nvidia.com/ resource or has DRA
// claims fails as FailExitCodeAnnotation makes it (exit code 1, a message
// naming the GPU and the XID), not only the pods that would have had the
// faulted GPU (kwok assigns no device to a pod). A Job's pod goes to
// Failed and the Job controller retries it, elsewhere once the agent's
// taint (--taint) keeps it off the node; a Deployment's pod crash-loops,
// and keeps doing so after the GPU recovers, until it is deleted.
// KeepRunningAnnotation keeps a Job's pod Running until then.
//
// What it does not simulate: the device plugin's view of GPU health (a
// lost GPU stays in the node's allocatable), faults that begin on their
// own, pods started on the node after the fault (they run), XIDs other
// than the critical ones killing the application that caused them, DCGM
// diagnostics, and NVLink, PCIe or row-remap faults (nvmltest can play
// them; no control asks for them yet).
//
// What the cluster does not do at all: run containers, route traffic to pod
// or service addresses (they are data only), or simulate GPUs below the
// Kubernetes API other than through the health agent's NVML double.
// Nothing here dials anything but 127.0.0.1.
package k8s

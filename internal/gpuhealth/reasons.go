package gpuhealth

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The condition and its reasons. Names marked EKS are those of EKS's node
// monitoring agent (github.com/aws/eks-node-monitoring-agent,
// pkg/reasons/reasons.yaml, section AcceleratedHardwareReady, and
// cmd/eks-node-monitoring-agent/main.go for the ready reason); the others
// are ours, for states EKS has no reason for.
const (
	// ConditionType is the node condition the agent keeps (EKS).
	ConditionType corev1.NodeConditionType = "AcceleratedHardwareReady"

	// ReasonReady: no fatal fault (EKS's ReadyReason for Nvidia GPUs).
	ReasonReady = "NvidiaGPUIsReady"
	// ReasonDoubleBitError: uncorrectable ECC errors (EKS, Fatal).
	ReasonDoubleBitError = "NvidiaDoubleBitError"
	// ReasonNVLinkError: NVLink errors (EKS, Fatal).
	ReasonNVLinkError = "NvidiaNVLinkError"
	// ReasonPCIeError: PCIe replays (EKS, Warning).
	ReasonPCIeError = "NvidiaPCIeError"
	// ReasonPageRetirement: pages marked for retirement (EKS, Warning).
	ReasonPageRetirement = "NvidiaPageRetirement"
	// ReasonDeviceCountMismatch: fewer GPUs answer than expected (EKS, Fatal).
	ReasonDeviceCountMismatch = "NvidiaDeviceCountMismatch"
	// ReasonRowRemapFailure: the GPU ran out of spare rows (ours).
	ReasonRowRemapFailure = "NvidiaRowRemapFailure"
	// ReasonDriverNotLoaded: NVML cannot load the driver (ours, Unknown).
	ReasonDriverNotLoaded = "NvidiaDriverNotLoaded"
	// ReasonNoGPU: the driver loads but sees no GPU (ours, Unknown).
	ReasonNoGPU = "NvidiaNoGPU"
	// ReasonNVMLError: NVML fails in another way (ours, Unknown).
	ReasonNVMLError = "NvidiaNVMLError"

	// EventReason is the reason of the agent's Events; their message is
	// "<condition reason>: <condition message>" (as EKS's agent writes them).
	EventReason = "AcceleratedHardwareReady"
	// TaintKey is the optional NoSchedule taint's key; its value is the
	// condition's reason.
	TaintKey = "gpu.gpuinfra.io/gpu-unhealthy"
	// AnnotationUnhealthyGPUs holds the JSON list of UnhealthyGPU
	// (EncodeUnhealthy); absent or empty when no GPU has a fatal fault.
	AnnotationUnhealthyGPUs = "gpu.gpuinfra.io/unhealthy-gpus"
	// ComponentHealthAgent is the app.kubernetes.io/name of the agent's pods.
	ComponentHealthAgent = "gpu-health-agent"
	// CommandName is the gpu-bootstrap subcommand that runs the agent.
	CommandName = "health-agent"
)

// XIDErrorReason is EKS's reason for a critical XID (template
// NvidiaXID%dError): "NvidiaXID79Error".
func XIDErrorReason(xid uint64) string { return fmt.Sprintf("NvidiaXID%dError", xid) }

// XIDWarningReason is EKS's reason for any other XID (template
// NvidiaXID%dWarning): "NvidiaXID13Warning".
func XIDWarningReason(xid uint64) string { return fmt.Sprintf("NvidiaXID%dWarning", xid) }

// Package gpuhealth is the vocabulary of a node's GPU health, shared by the
// node's health agent (gpu-bootstrap health-agent, internal/healthagent), the
// testbed that simulates it and the provider that reads it.
//
// It says what a GPU fault is (Fault and its FaultClass), which reason and
// message each fault puts on the node condition AcceleratedHardwareReady
// (the condition type and reason vocabulary of EKS's node monitoring agent,
// so EKS node auto repair acts on ours as on theirs), how a set of faults
// becomes one verdict (Judge), how often a verdict may change (Damper), the
// agent's command-line settings (Settings, Args, ParseArgs), and how the
// cluster side reads a node's health back (ReadNode and the per-GPU
// annotation).
//
// It must stay cgo-free and must not import internal/nvml or
// internal/telemetry: the provider imports it and builds with
// CGO_ENABLED=0. It reads no hardware and talks to no API server.
package gpuhealth

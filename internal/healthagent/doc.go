// Package healthagent is `gpu-bootstrap health-agent`: the node's GPU
// health agent. It reads the GPUs through NVML (nvml.Telemetry: a sample
// every Settings.SampleInterval, and NVML's XID and ECC events as they
// come), turns what it reads into faults (tracker.go), judges them into
// the node condition AcceleratedHardwareReady (gpuhealth.Judge, the
// vocabulary of EKS's node monitoring agent), damps it
// (gpuhealth.Damper) and publishes it on the node (publisher.go): the
// condition, the annotation gpuhealth.AnnotationUnhealthyGPUs, the
// optional NoSchedule taint, and core/v1 Events.
//
// Rules it keeps (docs/guides/gpu-health.md says them for users):
//   - An event reaches the API server at once; a sample adds what events
//     do not report (a lost GPU, ECC and row-remapping state, counters).
//     The published condition changes at most once per Settings.Damping;
//     the agent's first report after a start is not a change and starts
//     no interval.
//   - A fatal fault clears only on evidence that it is gone: a lost GPU
//     answers again, the GPU was reset (its since-driver-load counters went
//     backwards), or the node rebooted (a new boot ID). Never on a timer.
//   - An agent restart without a reboot forgets nothing: the standing
//     faults are kept in a node annotation with the node's boot ID
//     (state.go), written before the condition that reports them, and a
//     stopping agent takes NVML's last events and, for a few seconds,
//     writes what it has not written yet.
//   - No driver, no GPU or NVML failing is Unknown, never False, and the
//     agent keeps running and picks up a driver that appears later. An
//     API server it cannot reach is retried with back-off; it keeps
//     sampling and publishes the latest state when it can.
//
// It never changes a GPU setting and touches only what it owns on the
// node: its condition, its annotations, a taint with its key that it set,
// and its Events.
package healthagent

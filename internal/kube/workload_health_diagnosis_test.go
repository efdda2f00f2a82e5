package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

func TestFormatNodeGPUHealth(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 42, 5, 0, time.UTC)
	xid79 := NodeGPUHealth{Reported: true, Status: corev1.ConditionFalse, Reason: gpuhealth.XIDErrorReason(79), Message: xid79Message, Since: since}
	for _, tc := range []struct {
		description string
		health      NodeGPUHealth
		now         time.Time
		want        string
	}{{
		description: "a fault of today says the time of day",
		health:      xid79,
		now:         since.Add(3 * time.Hour),
		want:        "node gpu-p5-1: AcceleratedHardwareReady=False since 10:42 (" + xid79Message + ")",
	}, {
		description: "a fault of another day says the date too, in UTC",
		health:      xid79,
		now:         time.Date(2026, 11, 27, 0, 30, 0, 0, time.FixedZone("UTC-2", -2*3600)),
		want:        "node gpu-p5-1: AcceleratedHardwareReady=False since 2026-11-26 10:42 (" + xid79Message + ")",
	}, {
		description: "a condition without a message says its reason",
		health:      NodeGPUHealth{Reported: true, Status: corev1.ConditionUnknown, Reason: "NvidiaDriverNotLoaded", Since: since},
		now:         since,
		want:        "node gpu-p5-1: AcceleratedHardwareReady=Unknown since 10:42 (NvidiaDriverNotLoaded)",
	}} {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, formatNodeGPUHealth("gpu-p5-1", tc.health, tc.now))
		})
	}
}

func TestDiagnoseNamesTheGPUUnhealthyTaintAndHealth(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	xid79 := NodeGPUHealth{Reported: true, Status: corev1.ConditionFalse, Reason: gpuhealth.XIDErrorReason(79), Message: xid79Message, Since: since}
	unhealthyTaint := corev1.Taint{Key: gpuhealth.TaintKey, Value: gpuhealth.XIDErrorReason(79), Effect: corev1.TaintEffectNoSchedule}

	tainted := gpuNodeFacts("gpu-p5-1", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 8)
	tainted.Taints = append(tainted.Taints, unhealthyTaint)
	tainted.Health = xid79
	untaintedFaulty := gpuNodeFacts("gpu-p5-2", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 8)
	untaintedFaulty.Health = xid79
	wrongProduct := gpuNodeFacts("gpu-p4d-0", "NVIDIA-A100-SXM4-40GB", 40960, "8.0", 8, 8)
	wrongProduct.Health = xid79
	healthy := gpuNodeFacts("gpu-p5-3", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 0)
	healthy.Health = NodeGPUHealth{Reported: true, Status: corev1.ConditionTrue, Reason: gpuhealth.ReasonReady, Since: since}

	req := request(1)
	req.Products = []string{"NVIDIA-H100-80GB-HBM3"}

	t.Run("the only fitting node is tainted: a transient reason that says what the taint means", func(t *testing.T) {
		nodes := []NodeFacts{tainted, wrongProduct}
		d := Diagnose(nodes, req)
		require.Empty(t, d.Fit)
		require.True(t, d.CouldEverFit(), "the taint goes when the fault clears or repair replaces the node")
		require.Contains(t, d.String(), "1 has a fatal GPU fault: the GPU health agent's taint gpu.gpuinfra.io/gpu-unhealthy keeps pods off")
		require.Contains(t, d.String(), "(gpu-p5-1: gpu.gpuinfra.io/gpu-unhealthy=NvidiaXID79Error:NoSchedule)")
		require.NotContains(t, d.String(), "add it to tolerations", "tolerating it would put the pod on the broken GPU")
		require.Equal(t, "the GPU fault on gpu-p5-1 clears or node repair replaces it", d.WaitingFor())

		notes := newGPUHealthNotes(since.Add(time.Hour))
		notes.noteCandidates(d, nodes)
		require.Equal(t, " GPU health: node gpu-p5-1: AcceleratedHardwareReady=False since 10:42 ("+xid79Message+").", notes.sentence(),
			"the node of another product is no candidate, whatever its health")
	})

	t.Run("a pod that tolerates every taint is not kept off by it", func(t *testing.T) {
		all := request(1)
		all.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		d := Diagnose([]NodeFacts{tainted}, all)
		require.Equal(t, []string{"gpu-p5-1"}, d.Fit)
	})

	t.Run("without the taint the scheduler takes the faulty node: the diagnosis names its health", func(t *testing.T) {
		nodes := []NodeFacts{untaintedFaulty, healthy, wrongProduct}
		d := Diagnose(nodes, req)
		require.Equal(t, []string{"gpu-p5-2"}, d.Fit)
		notes := newGPUHealthNotes(since)
		notes.noteCandidates(d, nodes)
		require.Equal(t, " GPU health: node gpu-p5-2: AcceleratedHardwareReady=False since 10:42 ("+xid79Message+").", notes.sentence(),
			"a True node is not named")
	})

	t.Run("capacity counts the tainted node as away, not gone", func(t *testing.T) {
		c := CapacityFor([]NodeFacts{tainted}, req)
		require.Equal(t, int64(8), c.Pods)
		require.Equal(t, int64(0), c.Now())
		require.Equal(t, "tainted "+gpuhealth.TaintKey, c.Nodes[0].Away)
	})
}

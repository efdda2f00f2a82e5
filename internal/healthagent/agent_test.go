package healthagent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

func TestAgentReportsEachFaultClassFromTheDouble(t *testing.T) {
	for _, tc := range []struct {
		description string
		fleet       func() *nvmltest.Fleet
		fault       func(f *nvmltest.Fleet)
		status      corev1.ConditionStatus
		reason      string
		// inMessage must be in the condition's message (fatal) or the
		// Warning Event's (degrading).
		inMessage string
	}{
		{description: "a critical XID on GPU 3 is False with its EKS reason",
			fault:  func(f *nvmltest.Fleet) { f.FireXID(3, 79) },
			status: corev1.ConditionFalse, reason: "NvidiaXID79Error", inMessage: "GPU-00000000-0000-4000-8000-000000000003"},
		{description: "a GPU that fell off the bus without an event is XID 79's fault",
			fault:  func(f *nvmltest.Fleet) { f.LoseGPU(5) },
			status: corev1.ConditionFalse, reason: "NvidiaXID79Error", inMessage: "0000:90:00.0"},
		{description: "uncorrectable ECC errors are NvidiaDoubleBitError",
			fault:  func(f *nvmltest.Fleet) { f.AddECCErrors(2, 0, 3) },
			status: corev1.ConditionFalse, reason: gpuhealth.ReasonDoubleBitError, inMessage: "GPU-00000000-0000-4000-8000-000000000002"},
		{description: "a row remap failure is NvidiaRowRemapFailure",
			fault:  func(f *nvmltest.Fleet) { f.SetRowRemapping(1, false, true) },
			status: corev1.ConditionFalse, reason: gpuhealth.ReasonRowRemapFailure, inMessage: "GPU-00000000-0000-4000-8000-000000000001"},
		{description: "fewer GPUs than the node's label says is NvidiaDeviceCountMismatch",
			fleet:  func() *nvmltest.Fleet { return nvmltest.NewDGXA100WithGPUs(7) },
			status: corev1.ConditionFalse, reason: gpuhealth.ReasonDeviceCountMismatch, inMessage: "8"},
		{description: "an XID outside EKS's list degrades: True and a Warning Event",
			fault:  func(f *nvmltest.Fleet) { f.FireXID(4, 43) },
			status: corev1.ConditionTrue, reason: gpuhealth.ReasonReady, inMessage: gpuhealth.XIDWarningReason(43)},
		{description: "a pending row remap degrades: True and a Warning Event",
			fault:  func(f *nvmltest.Fleet) { f.SetRowRemapping(6, true, false) },
			status: corev1.ConditionTrue, reason: gpuhealth.ReasonReady, inMessage: gpuhealth.ReasonPageRetirement},
		{description: "growing PCIe replays degrade: True and a Warning Event",
			fault:  func(f *nvmltest.Fleet) { f.AddPCIeReplays(0, 25) },
			status: corev1.ConditionTrue, reason: gpuhealth.ReasonReady, inMessage: gpuhealth.ReasonPCIeError},
		{description: "growing NVLink errors degrade: True and a Warning Event",
			fleet: func() *nvmltest.Fleet {
				f := nvmltest.NewDGXA100()
				f.ConnectNVLink(0, 1, 2)
				return f
			},
			fault:  func(f *nvmltest.Fleet) { f.AddNVLinkCRCErrors(0, 1, 9) },
			status: corev1.ConditionTrue, reason: gpuhealth.ReasonReady, inMessage: gpuhealth.ReasonNVLinkError},
	} {
		t.Run(tc.description, func(t *testing.T) {
			t.Parallel()
			node := newNode(t, "boot-1")
			fleet := nvmltest.NewDGXA100()
			if tc.fleet != nil {
				fleet = tc.fleet()
			}
			run := startAgent(t, node, fleet, testSettings(), nil)
			if tc.fault != nil {
				waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
				tc.fault(fleet)
			}
			switch tc.status {
			case corev1.ConditionFalse:
				c := waitCondition(t, node, tc.status, tc.reason)
				require.Contains(t, c.Message, tc.inMessage)
				waitEvent(t, node, corev1.EventTypeWarning, tc.reason+": ")
				n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
				require.NoError(t, err)
				health := gpuhealth.ReadNode(n)
				if tc.reason != gpuhealth.ReasonDeviceCountMismatch {
					require.Len(t, health.Unhealthy, 1, "the annotation names the GPU")
					require.Equal(t, tc.reason, health.Unhealthy[0].Reason)
				}
			default:
				waitEvent(t, node, corev1.EventTypeWarning, tc.inMessage+": ")
				c := waitCondition(t, node, tc.status, tc.reason)
				require.Equal(t, corev1.ConditionTrue, c.Status)
			}
			run.running(t)
		})
	}
}

func TestAgentConditionChangesAtMostOncePerDampingIntervalUnderAStorm(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	client, writes := recordingClient(t, node)
	settings := testSettings()
	settings.Damping = time.Second
	startAgent(t, node, fleet, settings, client)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	time.Sleep(settings.Damping) // a quiet interval: the storm's first XID is published at once

	var critical []uint64
	for xid := uint64(1); xid < 200 && len(critical) < 5; xid++ {
		if gpuhealth.CriticalXID(xid) {
			critical = append(critical, xid)
		}
	}
	require.NotEmpty(t, critical)
	before := statusWrites(writes())
	start := time.Now()
	// 200 XIDs over about two seconds, spread over GPUs and XIDs so that
	// nearly every one changes the message.
	for i := range 200 {
		fleet.FireXID(i%8, critical[(i/8)%len(critical)])
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	c := waitCondition(t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(critical[0]))
	// Each of the 40 (GPU, XID) pairs fired 5 times: the last state, held
	// in the storm's last interval, is published when it ends.
	var final *corev1.NodeCondition
	require.Eventually(t, func() bool {
		final = condition(t, node)
		return strings.Contains(final.Message, "(5 times)") && !strings.Contains(final.Message, "(4 times)")
	}, 30*time.Second, 20*time.Millisecond, "the latest state was published when the interval ended")
	storm := statusWrites(writes()) - before
	allowed := int(elapsed/settings.Damping) + 2 // the first change at once, then one per interval, then the held one
	t.Logf("200 XIDs in %s: %d condition writes (at most %d allowed)", elapsed.Round(time.Millisecond), storm, allowed)
	require.LessOrEqual(t, storm, allowed)
	require.GreaterOrEqual(t, storm, 1)
	require.Equal(t, c.LastTransitionTime, final.LastTransitionTime, "the status stayed False: the transition time is kept")
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, gpuhealth.ReadNode(n).Unhealthy, 8, "the annotation names every GPU")
}

func TestAgentClearsWhenTheGPURecoversAndNotBefore(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	startAgent(t, node, fleet, testSettings(), nil)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)

	fleet.LoseGPU(3)
	fireXID(t, fleet, 3, 79)
	c := waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
	// Many samples and damping intervals later it still stands.
	waitSamples(t, fleet, 10)
	still := condition(t, node)
	require.Equal(t, corev1.ConditionFalse, still.Status, "a fault does not clear with time")
	require.Equal(t, c.LastTransitionTime, still.LastTransitionTime)

	fleet.RecoverGPU(3)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	waitEvent(t, node, corev1.EventTypeNormal, gpuhealth.ReasonReady+": ")
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Annotations, gpuhealth.AnnotationUnhealthyGPUs)
}

func TestAgentTaintsOnlyWhenAskedAndRemovesOnlyItsOwn(t *testing.T) {
	foreign := corev1.Taint{Key: "example.com/maintenance", Value: "planned", Effect: corev1.TaintEffectNoSchedule}
	t.Run("with Taint the node is tainted while the fault stands", func(t *testing.T) {
		t.Parallel()
		node := newNode(t, "boot-1", foreign)
		fleet := nvmltest.NewDGXA100()
		settings := testSettings()
		settings.Taint = true
		startAgent(t, node, fleet, settings, nil)
		waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
		require.Equal(t, []corev1.Taint{foreign}, taints(t, node))

		fleet.LoseGPU(2)
		waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
		waitTaints(t, node, func(ts []corev1.Taint) bool {
			return len(ts) == 2 && ts[0] == foreign && ts[1].Key == gpuhealth.TaintKey && ts[1].Value == "NvidiaXID79Error" && ts[1].Effect == corev1.TaintEffectNoSchedule
		})

		fleet.RecoverGPU(2)
		waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
		waitTaints(t, node, func(ts []corev1.Taint) bool { return len(ts) == 1 && ts[0] == foreign })
	})
	t.Run("without Taint no taint is set and another's taint with the key stays", func(t *testing.T) {
		t.Parallel()
		someoneElses := corev1.Taint{Key: gpuhealth.TaintKey, Value: "set-by-hand", Effect: corev1.TaintEffectNoSchedule}
		node := newNode(t, "boot-1", foreign, someoneElses)
		fleet := nvmltest.NewDGXA100()
		startAgent(t, node, fleet, testSettings(), nil)
		fleet.LoseGPU(2)
		waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
		fleet.RecoverGPU(2)
		waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
		time.Sleep(500 * time.Millisecond)
		require.Equal(t, []corev1.Taint{foreign, someoneElses}, taints(t, node))
	})
}

func taints(t *testing.T, node string) []corev1.Taint {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	// The node lifecycle controller taints a node without a kubelet
	// node.kubernetes.io/not-ready: not ours, not the test's.
	var out []corev1.Taint
	for _, taint := range n.Spec.Taints {
		if !strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
			taint.TimeAdded = nil
			out = append(out, taint)
		}
	}
	return out
}

func waitTaints(t *testing.T, node string, ok func([]corev1.Taint) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []corev1.Taint
	for time.Now().Before(deadline) {
		if last = taints(t, node); ok(last) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("node %s: taints never as wanted; last: %+v", node, last)
}

func TestAgentKeepsSamplingWhileTheAPIServerIsUnreachableAndCatchesUp(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	p := newProxy(t, apiServerAddress())
	fleet := nvmltest.NewDGXA100()
	// The API server is unreachable from the start.
	run := startAgent(t, node, fleet, testSettings(), proxiedClient(t, p))
	fireXID(t, fleet, 6, 79)
	waitSamples(t, fleet, 5)
	require.Nil(t, condition(t, node), "nothing reached the API server")
	run.running(t)

	p.open()
	c := waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
	require.Contains(t, c.Message, "GPU-00000000-0000-4000-8000-000000000006")
	waitEvent(t, node, corev1.EventTypeWarning, "NvidiaXID79Error: ")

	// It goes away again; the GPU is reset meanwhile; it comes back.
	p.close()
	fleet.LoseGPU(6)
	waitSamples(t, fleet, 2) // a whole sample saw the GPU lost
	fleet.RecoverGPU(6)
	waitSamples(t, fleet, 2)
	run.running(t)
	p.open()
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
}

func TestAgentWithoutDriverIsUnknownAndPicksUpADriverThatAppears(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	fleet.SetDriverLoaded(false)
	run := startAgent(t, node, fleet, testSettings(), nil)
	c := waitCondition(t, node, corev1.ConditionUnknown, gpuhealth.ReasonDriverNotLoaded)
	require.Contains(t, c.Message, "driver")
	time.Sleep(500 * time.Millisecond)
	run.running(t)

	fleet.SetDriverLoaded(true)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	// Events are watched once the driver is there: an XID reaches the node.
	fireXID(t, fleet, 0, 79)
	waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
}

func TestAgentRestartKeepsTheFaultsOfThisBootOnly(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	first := startAgent(t, node, fleet, testSettings(), nil)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	fireXID(t, fleet, 1, 79) // the event only: NVML cannot tell a new agent about it
	c := waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
	first.stop(t)

	// The pod restarts; the node did not reboot.
	second := startAgent(t, node, fleet, testSettings(), nil)
	time.Sleep(time.Second)
	still := condition(t, node)
	require.Equal(t, corev1.ConditionFalse, still.Status, "the restarted agent remembers the XID")
	require.Equal(t, c.LastTransitionTime, still.LastTransitionTime)
	require.True(t, strings.Contains(still.Message, "XID 79"), still.Message)
	second.stop(t)

	// The node rebooted: a new boot ID, every GPU reset.
	setBootID(t, node, "boot-2")
	startAgent(t, node, nvmltest.NewDGXA100(), testSettings(), nil)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
}

func TestAgentSavesAFaultBeforeItPublishesIt(t *testing.T) {
	t.Parallel()
	// A restart between two writes must not forget the fault or leave a
	// taint nobody owns: the state annotation goes first, then the
	// condition, then the taint.
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	client, writes := recordingClient(t, node)
	settings := testSettings()
	settings.Taint = true
	startAgent(t, node, fleet, settings, client)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	fireXID(t, fleet, 3, 79)
	waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
	waitTaints(t, node, func(ts []corev1.Taint) bool { return len(ts) == 1 })

	saved, published, tainted := -1, -1, -1
	for i, w := range writes() {
		switch {
		case !w.status && saved < 0 && strings.Contains(w.body, `\"xid\":79`):
			saved = i
		case w.status && published < 0 && strings.Contains(w.body, `"NvidiaXID79Error"`):
			published = i
		case !w.status && tainted < 0 && strings.Contains(w.body, gpuhealth.TaintKey):
			tainted = i
		}
	}
	require.GreaterOrEqual(t, saved, 0, "the XID was saved on the node")
	require.Less(t, saved, published, "the XID is saved before the condition says it")
	require.Less(t, published, tainted, "the taint follows the condition")
}

func TestAgentRemovesItsTaintWhenTheAnswersToSettingItWereLost(t *testing.T) {
	t.Parallel()
	// The API server sets the taint but every answer is lost, and the GPU
	// recovers meanwhile: the node as the agent last saw it has no taint,
	// the node has one, and the agent must remove it.
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	var lost atomic.Int64
	client := clientWith(t, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/nodes/"+node) {
				return rt.RoundTrip(r)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			resp, err := rt.RoundTrip(r)
			if err != nil || !bytes.Contains(body, []byte(gpuhealth.TaintKey)) {
				return resp, err // removing the taint is answered
			}
			_ = resp.Body.Close()
			if lost.Add(1) == 1 {
				fleet.RecoverGPU(2)
			}
			return nil, errors.New("the connection was reset before the answer came")
		})
	})
	settings := testSettings()
	settings.Taint = true
	startAgent(t, node, fleet, settings, client)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	fleet.LoseGPU(2)
	require.Eventually(t, func() bool { return lost.Load() > 0 }, 30*time.Second, 10*time.Millisecond, "the agent never set its taint")

	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	waitTaints(t, node, func(ts []corev1.Taint) bool { return len(ts) == 0 })
	require.Eventually(t, func() bool { return !strings.Contains(savedState(t, node), `"tainted":true`) },
		30*time.Second, 20*time.Millisecond, "the state still claims the taint")
}

func TestAgentToldToStopRightAfterAFaultStillWritesIt(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	p := newProxy(t, apiServerAddress())
	p.open()
	fleet := nvmltest.NewDGXA100()
	log := newSignalLog(t, "cannot reach the API server")
	run := startAgentLogging(t, node, fleet, testSettings(), proxiedClient(t, p), log)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)

	// The API server goes away; an XID comes; the agent tries to write it
	// (nothing else makes a healthy, published agent write before its
	// heartbeat) and backs off.
	p.close()
	fireXID(t, fleet, 4, 79)
	select {
	case <-log.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent never tried to write the XID")
	}
	// The API server is back the moment the pod is told to stop: the agent
	// writes what it has before it returns, not at its next back-off.
	p.open()
	run.stop(t)
	require.Contains(t, savedState(t, node), `"xid":79`)

	startAgent(t, node, fleet, testSettings(), nil)
	waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
}

func TestAgentThatNeverReachedTheAPIServerStillWritesItsFaultsWhenToldToStop(t *testing.T) {
	t.Parallel()
	// The API server was unreachable for the agent's whole life and comes
	// back as the pod is told to stop: the node is read in the last
	// moments, and the XID is judged and written then.
	node := newNode(t, "boot-1")
	p := newProxy(t, apiServerAddress())
	fleet := nvmltest.NewDGXA100()
	run := startAgent(t, node, fleet, testSettings(), proxiedClient(t, p))
	fireXID(t, fleet, 7, 79)
	waitSamples(t, fleet, 2) // the loop took the event
	p.open()
	run.stop(t)
	require.Contains(t, savedState(t, node), `"xid":79`)
	c := condition(t, node)
	require.NotNil(t, c)
	require.Equal(t, "NvidiaXID79Error", c.Reason)
}

func TestAgentToldToStopAsAnXIDComesKeepsIt(t *testing.T) {
	t.Parallel()
	// The XID may still be on its way from NVML to the agent when the pod
	// is told to stop: NVML will not deliver it again, so the agent takes
	// it and saves it before it returns.
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	run := startAgent(t, node, fleet, testSettings(), nil)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	fireXID(t, fleet, 5, 79)
	run.stop(t)
	require.Contains(t, savedState(t, node), `"xid":79`)
}

func TestAgentPublishesTheFirstFaultAfterItsStartAtOnce(t *testing.T) {
	t.Parallel()
	node := newNode(t, "boot-1")
	fleet := nvmltest.NewDGXA100()
	settings := testSettings()
	settings.Damping = time.Hour // the agent's first report must not hold the fault for an hour
	startAgent(t, node, fleet, settings, nil)
	waitCondition(t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
	fireXID(t, fleet, 2, 79)
	waitCondition(t, node, corev1.ConditionFalse, "NvidiaXID79Error")
}

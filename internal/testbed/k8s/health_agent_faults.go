package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// GPU faults reach a node's NVML double through the Kubernetes API, so
// that a test's Cluster, a detached testbed (`gpu-testbed gpu-fault`) and
// kubectl do the same: a request is a node annotation
//
//	gpu-fault.testbed.gpuinfra.io/<id>: {"gpu":3,"xid":79}
//
// (the value a GPUFault in JSON, <id> any annotation name unique to the
// request). The health-agent simulator plays it on the node's double once
// and removes it; when it cannot, it writes why as
// gpu-fault-error.testbed.gpuinfra.io/<id> in the same update.
// RequestGPUFault does all of that and waits for the answer.
const (
	GPUFaultRequestPrefix = "gpu-fault.testbed.gpuinfra.io/"
	GPUFaultErrorPrefix   = "gpu-fault-error.testbed.gpuinfra.io/"
)

// GPUFault is one fault request: exactly one of XID, Lose, Recover and the
// ECC counts, on the GPU with NVML index GPU.
type GPUFault struct {
	GPU int `json:"gpu"`
	// XID reports this XID on the GPU as an NVML event. XID 79 ("GPU has
	// fallen off the bus", NVIDIA's XID catalog, gpuhealth.XIDMeaning) also
	// loses the GPU, as the driver does: NVML then answers
	// ERROR_GPU_IS_LOST for it until it is recovered.
	XID uint64 `json:"xid,omitempty"`
	// Lose makes the GPU answer ERROR_GPU_IS_LOST without an event: a GPU
	// that fell off the bus before the agent started.
	Lose bool `json:"lose,omitempty"`
	// Recover plays a GPU reset (nvmltest.Fleet.RecoverGPU): the GPU
	// answers again and its since-driver-load counters start from 0.
	Recover bool `json:"recover,omitempty"`
	// ECCCorrected and ECCUncorrected are added to the GPU's volatile and
	// aggregate ECC counters, each with its NVML event (single-bit,
	// double-bit).
	ECCCorrected   uint64 `json:"ecc_corrected,omitempty"`
	ECCUncorrected uint64 `json:"ecc_uncorrected,omitempty"`
}

// Validate checks that f asks for one thing.
func (f GPUFault) Validate() error {
	if f.GPU < 0 {
		return fmt.Errorf("gpu %d: a GPU index is 0 or more", f.GPU)
	}
	n := 0
	for _, set := range []bool{f.XID != 0, f.Lose, f.Recover, f.ECCCorrected != 0 || f.ECCUncorrected != 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("a GPU fault is exactly one of: an XID (non-zero), lose, recover, ECC errors (a non-zero count)")
	}
	return nil
}

func (f GPUFault) String() string {
	switch {
	case f.XID != 0:
		return fmt.Sprintf("XID %d on GPU %d", f.XID, f.GPU)
	case f.Lose:
		return fmt.Sprintf("GPU %d lost", f.GPU)
	case f.Recover:
		return fmt.Sprintf("GPU %d recovered", f.GPU)
	}
	return fmt.Sprintf("%d corrected and %d uncorrected ECC errors on GPU %d", f.ECCCorrected, f.ECCUncorrected, f.GPU)
}

// FireXID reports XID xid on GPU gpu of node to the node's health agent
// (see GPUFault.XID), and fails the node's GPU pods when the XID is one
// of the critical ones (gpuhealth.CriticalXID). It errs when no health
// agent pod runs on node.
func (c *Cluster) FireXID(ctx context.Context, node string, gpu int, xid uint64) error {
	return RequestGPUFault(ctx, c.client, node, GPUFault{GPU: gpu, XID: xid})
}

// LoseGPU makes GPU gpu of node fall off the bus without an XID event (see
// GPUFault.Lose), and fails the node's GPU pods.
func (c *Cluster) LoseGPU(ctx context.Context, node string, gpu int) error {
	return RequestGPUFault(ctx, c.client, node, GPUFault{GPU: gpu, Lose: true})
}

// RecoverGPU resets GPU gpu of node (see GPUFault.Recover).
func (c *Cluster) RecoverGPU(ctx context.Context, node string, gpu int) error {
	return RequestGPUFault(ctx, c.client, node, GPUFault{GPU: gpu, Recover: true})
}

// AddECCErrors adds ECC errors to GPU gpu of node (see
// GPUFault.ECCCorrected); uncorrected ones fail the node's GPU pods.
func (c *Cluster) AddECCErrors(ctx context.Context, node string, gpu int, corrected, uncorrected uint64) error {
	return RequestGPUFault(ctx, c.client, node, GPUFault{GPU: gpu, ECCCorrected: corrected, ECCUncorrected: uncorrected})
}

// faultAnswerTimeout bounds the wait for a simulator to play a request
// when ctx does not.
const faultAnswerTimeout = time.Minute

// RequestGPUFault asks the health-agent simulator of the cluster behind
// client to play f on node's GPUs, and returns once it has (or why it
// could not). It errs at once when no health agent pod runs on node, and
// after a minute when no simulator answers.
func RequestGPUFault(ctx context.Context, client kubernetes.Interface, node string, f GPUFault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	if !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return podRunning(&p) && isHealthAgentPod(&p) }) {
		return errNoHealthAgent(node)
	}
	value, err := json.Marshal(f)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%d-%s", time.Now().UnixNano(), rand.String(6))
	if err := patchNodeAnnotations(ctx, client, node, map[string]any{GPUFaultRequestPrefix + id: string(value)}); err != nil {
		return fmt.Errorf("requesting %s on node %s: %w", f, node, err)
	}

	wait, cancel := context.WithTimeout(ctx, faultAnswerTimeout)
	defer cancel()
	answered, err := waitFor(wait, client.CoreV1().RESTClient(), "nodes", "", metav1.ListOptions{FieldSelector: "metadata.name=" + node}, func(n *corev1.Node) bool {
		_, asked := n.Annotations[GPUFaultRequestPrefix+id]
		return !asked
	})
	if err != nil {
		// Take the request back: it is not to be played later by surprise.
		_ = patchNodeAnnotations(context.WithoutCancel(ctx), client, node, map[string]any{GPUFaultRequestPrefix + id: nil})
		if ctx.Err() == nil {
			return fmt.Errorf("%s on node %s: no testbed simulator took the request within %s (is `gpu-testbed simulate` running for this testbed?)", f, node, faultAnswerTimeout)
		}
		return fmt.Errorf("%s on node %s: %w", f, node, err)
	}
	if why, failed := answered.Annotations[GPUFaultErrorPrefix+id]; failed {
		_ = patchNodeAnnotations(ctx, client, node, map[string]any{GPUFaultErrorPrefix + id: nil})
		return fmt.Errorf("%s on node %s: %s", f, node, why)
	}
	return nil
}

func errNoHealthAgent(node string) error {
	return fmt.Errorf("no health agent runs on node %s: no Running pod there has a container whose args start with %q; deploy gpu-bootstrap's health agent there first (gpu_device_plugin's health_agent)", node, gpuhealth.CommandName)
}

func patchNodeAnnotations(ctx context.Context, client kubernetes.Interface, node string, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// xidUnseenAfter is how long the simulator keeps trying to deliver an XID
// to an agent that has not registered for NVML events yet (it just
// started) before it answers that the event went unseen.
const xidUnseenAfter = 30 * time.Second

// errRetry is a request kept for later.
var errRetry = errors.New("an XID request waits for the health agent to register for NVML events")

// playFaultRequests plays node's fault requests on g's double (nil: the
// node has none) and removes them, answering an error for those it cannot
// play.
func (s *healthAgentSimulator) playFaultRequests(ctx context.Context, node *corev1.Node, g *simulatedGPUs) error {
	requests := map[string]string{}
	for key, value := range node.Annotations {
		if id, ok := strings.CutPrefix(key, GPUFaultRequestPrefix); ok {
			requests[id] = value
		}
	}
	s.mu.Lock()
	if len(requests) == 0 {
		delete(s.answered, node.Name) // every answer reached the cache
		s.mu.Unlock()
		return nil
	}
	answered := s.answered[node.Name]
	if answered == nil {
		answered = map[string]*faultAnswer{}
		s.answered[node.Name] = answered
	}
	for id := range answered {
		if _, ok := requests[id]; !ok {
			delete(answered, id) // the removal reached the cache
		}
	}
	s.mu.Unlock()

	patch := map[string]any{}
	var retry error
	for _, id := range slices.Sorted(maps.Keys(requests)) {
		s.mu.Lock()
		answer := answered[id]
		s.mu.Unlock()
		if answer == nil {
			err := s.playFaultRequest(ctx, node.Name, g, id, requests[id])
			if errors.Is(err, errRetry) {
				retry = err
				continue
			}
			answer = &faultAnswer{}
			if err != nil {
				answer.err = err.Error()
				s.pods.log("node %s: fault request %s refused: %v", node.Name, id, err)
			}
			s.mu.Lock()
			answered[id] = answer // played is played, whether or not the answer gets through
			s.mu.Unlock()
		}
		if answer.sent {
			continue
		}
		patch[GPUFaultRequestPrefix+id] = nil
		if answer.err != "" {
			patch[GPUFaultErrorPrefix+id] = answer.err
		}
	}
	if len(patch) == 0 {
		return retry
	}
	if err := patchNodeAnnotations(ctx, s.client, node.Name, patch); err != nil {
		return fmt.Errorf("answering fault requests: %w", err)
	}
	s.mu.Lock()
	for _, answer := range answered {
		answer.sent = true
	}
	s.mu.Unlock()
	return retry
}

// faultAnswer is what the simulator answers a request: err is empty
// when it played it; sent once the answer is on the node.
type faultAnswer struct {
	err  string
	sent bool
}

// playFaultRequest plays one request; errRetry keeps it for later.
func (s *healthAgentSimulator) playFaultRequest(ctx context.Context, node string, g *simulatedGPUs, id, value string) error {
	var f GPUFault
	if err := json.Unmarshal([]byte(value), &f); err != nil {
		return fmt.Errorf("the request is not a GPU fault in JSON (e.g. {\"gpu\":3,\"xid\":79}): %w", err)
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if g == nil || g.agent == nil {
		return errNoHealthAgent(node)
	}
	if f.GPU >= g.gpus {
		return fmt.Errorf("gpu %d: the node's NVML enumerates %d GPUs (indices 0 to %d)", f.GPU, g.gpus, g.gpus-1)
	}
	if !playFault(g.fleet, f) {
		since, waited := g.pending[id]
		if !waited {
			g.pending[id] = time.Now()
			return errRetry
		}
		if time.Since(since) < xidUnseenAfter {
			return errRetry
		}
		delete(g.pending, id)
		return fmt.Errorf("the health agent did not register for NVML's XID events within %s: the XID went unseen", xidUnseenAfter)
	}
	delete(g.pending, id)
	s.pods.log("node %s: %s", node, f)
	if message, fatal := f.podFailure(node); fatal {
		s.failGPUPods(ctx, node, message)
	}
	return nil
}

// playFault changes the double as f says. It is false for an XID that no
// event set received (the agent has not registered yet).
func playFault(fleet *nvmltest.Fleet, f GPUFault) bool {
	switch {
	case f.XID != 0:
		if f.XID == 79 {
			fleet.LoseGPU(f.GPU)
		}
		return fleet.FireXID(f.GPU, f.XID) > 0
	case f.Lose:
		fleet.LoseGPU(f.GPU)
	case f.Recover:
		fleet.RecoverGPU(f.GPU)
	default:
		fleet.AddECCErrors(f.GPU, f.ECCCorrected, f.ECCUncorrected)
		event := func(kind uint64) {
			fleet.FireEvent(f.GPU, gonvml.EventData{EventType: kind, GpuInstanceId: nvmltest.NoInstance, ComputeInstanceId: nvmltest.NoInstance})
		}
		if f.ECCCorrected > 0 {
			event(gonvml.EventTypeSingleBitEccError)
		}
		if f.ECCUncorrected > 0 {
			event(gonvml.EventTypeDoubleBitEccError)
		}
	}
	return true
}

package healthagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// This file owns writing to the API server: the node's condition, its
// annotations, the taint, and Events. It always writes the latest state
// it was given, so a state that changed twice while the API server was
// unreachable is written once, as it is now; Events wait in a bounded
// queue. It runs in a goroutine of its own: the agent keeps sampling while
// a write waits or backs off.

const (
	// heartbeatInterval is how often the condition's lastHeartbeatTime is
	// refreshed while nothing changes: EKS's node monitoring agent does it
	// every 5 minutes (pkg/manager/node_exporter.go, heartbeatInterval).
	heartbeatInterval = 5 * time.Minute
	// requestTimeout bounds one API request.
	requestTimeout = 10 * time.Second
	// flushTimeout bounds the last writes after the agent was told to stop
	// (Run's events take at most two NVML waits before them): well inside
	// the 30 s a kubelet gives a pod between SIGTERM and SIGKILL by default
	// (terminationGracePeriodSeconds).
	flushTimeout = 5 * time.Second
	// backoffMin and backoffMax bound the wait before a failed write is
	// tried again.
	backoffMin, backoffMax = 500 * time.Millisecond, 30 * time.Second
	// eventQueueLen is how many Events wait for the API server before the
	// oldest is dropped.
	eventQueueLen = 256
)

// publisher writes the agent's state to the node.
type publisher struct {
	client kubernetes.Interface
	node   string
	taint  bool
	now    func() time.Time
	log    *logger

	// firstNode receives the node as first read, once: the agent restores
	// its state and learns the GPU count label from it.
	firstNode chan *corev1.Node

	// gpuCount receives the node's nvidia.com/gpu.count label each time
	// the publisher sees it changed (GPU Feature Discovery may add it after
	// the agent started): on the node a write returns, at the latest with
	// the heartbeat.
	gpuCount chan string

	mu     sync.Mutex
	seq    int64              // Events queued so far, to name them apart
	want   *gpuhealth.Verdict // nil: nothing to publish yet
	state  savedState         // the tracker's part; Tainted is the publisher's
	events []*corev1.Event
	kick   chan struct{}

	// Owned by run.
	seen      *corev1.Node // the node as last read or written
	lastErr   string
	lastCount string // the GPU count label last sent on gpuCount
}

func newPublisher(client kubernetes.Interface, node string, taint bool, now func() time.Time, log *logger) *publisher {
	return &publisher{
		client: client, node: node, taint: taint, now: now, log: log,
		firstNode: make(chan *corev1.Node, 1), gpuCount: make(chan string, 1), kick: make(chan struct{}, 1),
	}
}

// set gives the publisher the verdict to publish and the state to keep.
func (p *publisher) set(v gpuhealth.Verdict, s savedState) {
	p.mu.Lock()
	p.want, p.state = &v, s
	p.mu.Unlock()
	p.wake()
}

// setState gives the publisher the state to keep, with the verdict it has.
func (p *publisher) setState(s savedState) {
	p.mu.Lock()
	p.state = s
	p.mu.Unlock()
	p.wake()
}

// event queues an Event on the node.
func (p *publisher) event(eventType, reason, message string) {
	at := metav1.NewTime(p.now())
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// client-go's recorder names Events this way (<object>.<unique
			// hex>); seq keeps two Events of one instant apart.
			Name:      fmt.Sprintf("%s.%x", p.node, at.UnixNano()+seq),
			Namespace: metav1.NamespaceDefault,
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: p.node},
		Reason:         gpuhealth.EventReason,
		Message:        reason + ": " + message,
		Type:           eventType,
		Source:         corev1.EventSource{Component: gpuhealth.ComponentHealthAgent, Host: p.node},
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
	}
	p.mu.Lock()
	if len(p.events) == eventQueueLen {
		p.events = p.events[1:]
	}
	p.events = append(p.events, e)
	p.mu.Unlock()
	p.wake()
}

func (p *publisher) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run writes until ctx ends, retrying with back-off while the API server
// fails, and refreshing the heartbeat.
func (p *publisher) run(ctx context.Context) {
	backoff := backoffMin
	for {
		err := p.sync(ctx)
		var wait time.Duration
		if err != nil {
			if msg := err.Error(); msg != p.lastErr {
				p.log.printf("cannot reach the API server, retrying with back-off (the agent keeps sampling): %v", err)
				p.lastErr = msg
			}
			wait = backoff
			backoff = min(2*backoff, backoffMax)
		} else {
			if p.lastErr != "" {
				p.log.printf("the API server answers again: node %s is up to date", p.node)
				p.lastErr = ""
			}
			backoff = backoffMin
			wait = p.untilHeartbeat()
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-p.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// flush tries until ctx ends to write the state last handed over on the
// node, so that a fault the agent saw just before its pod was told to stop
// reaches the node and its restart finds it saved; then it tries the
// queued Events once.
func (p *publisher) flush(ctx context.Context) {
	for {
		err := p.syncNode(ctx)
		if err == nil {
			break
		}
		timer := time.NewTimer(backoffMin)
		select {
		case <-ctx.Done():
			timer.Stop()
			p.log.printf("stopping with node %s not up to date: %v", p.node, err)
			return
		case <-timer.C:
		}
	}
	if err := p.syncEvents(ctx); err != nil {
		p.log.printf("stopping with Events not written: %v", err)
	}
}

// untilHeartbeat is how long until the condition's heartbeat is due.
func (p *publisher) untilHeartbeat() time.Duration {
	if c := p.condition(); c != nil {
		return max(time.Until(c.LastHeartbeatTime.Add(heartbeatInterval)), time.Second)
	}
	return heartbeatInterval
}

// condition is our condition on the node as last seen.
func (p *publisher) condition() *corev1.NodeCondition {
	if p.seen == nil {
		return nil
	}
	for i := range p.seen.Status.Conditions {
		if c := &p.seen.Status.Conditions[i]; c.Type == gpuhealth.ConditionType {
			return c
		}
	}
	return nil
}

// sync brings the node up to date with the latest state, then creates
// the queued Events.
func (p *publisher) sync(ctx context.Context) error {
	if err := p.syncNode(ctx); err != nil {
		return err
	}
	return p.syncEvents(ctx)
}

// syncNode reads the node the first time and writes the latest state on
// it: annotations, condition, taint.
func (p *publisher) syncNode(ctx context.Context) error {
	if p.seen == nil {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		node, err := p.client.CoreV1().Nodes().Get(rctx, p.node, metav1.GetOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("reading node %s: %w", p.node, err)
		}
		p.seen = node
		p.lastCount = node.Labels[LabelGPUCount]
		p.firstNode <- node.DeepCopy()
	}
	defer p.reportGPUCount()
	p.mu.Lock()
	want, state := p.want, p.state
	p.mu.Unlock()
	if want == nil {
		return nil
	}
	return p.publish(ctx, *want, state)
}

// publish writes the node in an order that a restart anywhere between two
// writes cannot turn into a forgotten fault or a taint nobody owns: first
// the state annotation (the faults, and that the taint is the agent's
// before it is set), then the condition they explain, then the taint, and
// only after the taint is gone the state that says it is not the agent's.
// A state the API server refuses to save does not hold the condition
// back: the fault reaches the node, and the save is retried.
func (p *publisher) publish(ctx context.Context, want gpuhealth.Verdict, state savedState) error {
	saved, _ := decodeState(p.seen.Annotations[AnnotationState]) // unreadable: the agent did not set a taint it knows of
	// Tainted stays true until the taint is known gone: the node as last
	// seen may not show a taint whose write's answer was lost.
	state.Tainted = p.wantsTaint(want) || saved.Tainted
	saveErr := p.syncAnnotations(ctx, want, state)
	if err := p.syncCondition(ctx, want); err != nil {
		return errors.Join(saveErr, err)
	}
	if saveErr != nil {
		// No taint the state does not say is the agent's; the condition's
		// Event still goes out.
		return errors.Join(saveErr, p.syncEvents(ctx))
	}
	return p.syncTaint(ctx, want, state)
}

// wantsTaint says whether the agent's taint belongs on the node with want.
func (p *publisher) wantsTaint(want gpuhealth.Verdict) bool {
	return p.taint && want.Status == corev1.ConditionFalse
}

// syncCondition writes the condition when it differs from the node's or
// its heartbeat is due, and queues the Event of a transition.
func (p *publisher) syncCondition(ctx context.Context, want gpuhealth.Verdict) error {
	cur := p.condition()
	now := p.now()
	changed := cur == nil || cur.Status != want.Status || cur.Reason != want.Reason || cur.Message != want.Message
	if !changed && now.Sub(cur.LastHeartbeatTime.Time) < heartbeatInterval {
		return nil
	}
	cond := corev1.NodeCondition{
		Type: gpuhealth.ConditionType, Status: want.Status, Reason: want.Reason, Message: want.Message,
		LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
	if cur != nil && cur.Status == want.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	// A strategic merge patch: node conditions merge by type, so the
	// kubelet's (and anyone's) other conditions are left alone.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	node, err := p.client.CoreV1().Nodes().Patch(rctx, p.node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing condition %s on node %s: %w", gpuhealth.ConditionType, p.node, err)
	}
	p.seen = node
	if changed {
		p.log.printf("%s=%s %s: %s", gpuhealth.ConditionType, want.Status, want.Reason, want.Message)
		eventType := corev1.EventTypeWarning
		if want.Status == corev1.ConditionTrue {
			eventType = corev1.EventTypeNormal
		}
		p.event(eventType, want.Reason, want.Message)
	}
	return nil
}

// syncTaint sets or removes the agent's taint once state, which says
// whether the taint is the agent's, is on the node; a removed taint is
// followed by the state that no longer claims it.
func (p *publisher) syncTaint(ctx context.Context, want gpuhealth.Verdict, state savedState) error {
	if p.wantsTaint(want) {
		present := findTaint(p.seen.Spec.Taints)
		if present == nil || present.Value != want.Reason || present.Effect != corev1.TaintEffectNoSchedule {
			return p.updateTaint(ctx, &corev1.Taint{Key: gpuhealth.TaintKey, Value: want.Reason, Effect: corev1.TaintEffectNoSchedule})
		}
		return nil
	}
	if state.Tainted {
		if err := p.updateTaint(ctx, nil); err != nil { // reads the node afresh: a no-op when the taint is gone
			return err
		}
	}
	state.Tainted = false
	return p.syncAnnotations(ctx, want, state)
}

// syncAnnotations writes the unhealthy-GPU list and the state when they
// differ from the node's.
func (p *publisher) syncAnnotations(ctx context.Context, want gpuhealth.Verdict, state savedState) error {
	annotations := map[string]any{}
	unhealthy := gpuhealth.EncodeUnhealthy(want.Unhealthy)
	if cur, ok := p.seen.Annotations[gpuhealth.AnnotationUnhealthyGPUs]; cur != unhealthy || (ok && unhealthy == "") {
		annotations[gpuhealth.AnnotationUnhealthyGPUs] = nullIfEmpty(unhealthy)
	}
	saved, err := decodeState(p.seen.Annotations[AnnotationState])
	if err != nil || !saved.sameFaults(state) {
		annotations[AnnotationState] = state.encode()
	}
	if len(annotations) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	node, err := p.client.CoreV1().Nodes().Patch(rctx, p.node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("writing annotations on node %s: %w", p.node, err)
	}
	p.seen = node
	return nil
}

// updateTaint sets the agent's taint (nil: removes it), leaving every
// other taint as it is.
func (p *publisher) updateTaint(ctx context.Context, taint *corev1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		node, err := p.client.CoreV1().Nodes().Get(rctx, p.node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading node %s: %w", p.node, err)
		}
		var taints []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != gpuhealth.TaintKey {
				taints = append(taints, t)
			}
		}
		if taint == nil && len(taints) == len(node.Spec.Taints) {
			p.seen = node // nothing to remove
			return nil
		}
		if taint != nil {
			taint.TimeAdded = &metav1.Time{Time: p.now()}
			taints = append(taints, *taint)
		}
		node.Spec.Taints = taints
		updated, err := p.client.CoreV1().Nodes().Update(rctx, node, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		p.seen = updated
		if taint != nil {
			p.log.printf("tainted node %s %s=%s:%s", p.node, taint.Key, taint.Value, taint.Effect)
		} else {
			p.log.printf("removed taint %s from node %s", gpuhealth.TaintKey, p.node)
		}
		return nil
	})
}

// syncEvents creates the queued Events, oldest first.
func (p *publisher) syncEvents(ctx context.Context) error {
	for {
		p.mu.Lock()
		if len(p.events) == 0 {
			p.mu.Unlock()
			return nil
		}
		e := p.events[0].DeepCopy()
		p.mu.Unlock()
		e.InvolvedObject.UID = p.seen.UID
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		_, err := p.client.CoreV1().Events(e.Namespace).Create(rctx, e, metav1.CreateOptions{})
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) { // exists: written before an answer was lost
			return fmt.Errorf("writing an Event on node %s: %w", p.node, err)
		}
		p.mu.Lock()
		if len(p.events) > 0 && p.events[0].Name == e.Name {
			p.events = p.events[1:]
		}
		p.mu.Unlock()
	}
}

// reportGPUCount sends the node's GPU count label when it changed.
func (p *publisher) reportGPUCount() {
	if p.seen == nil {
		return
	}
	count := p.seen.Labels[LabelGPUCount]
	if count == p.lastCount {
		return
	}
	p.lastCount = count
	select {
	case <-p.gpuCount: // replace a value not taken yet
	default:
	}
	p.gpuCount <- count
}

func findTaint(taints []corev1.Taint) *corev1.Taint {
	for i := range taints {
		if taints[i].Key == gpuhealth.TaintKey {
			return &taints[i]
		}
	}
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

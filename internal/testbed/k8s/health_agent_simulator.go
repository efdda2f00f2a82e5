package k8s

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/healthagent"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The health-agent simulator stands in for the kubelet running
// gpu-bootstrap's health-agent DaemonSet pod on a kwok node, and for the
// node's GPUs under it. When a pod with a container whose args are
// `health-agent [flags]` (gpuhealth.ParseArgs accepts them) is Running on
// a node, it runs the real agent, healthagent.Run, in this process for
// that node: with the pod's settings, over internal/nvml's telemetry of
// the node's NVML double (an nvmltest DGX A100 with the node's GPU count),
// and with the simulator's client. When the pod stops running or goes, the
// agent stops; the double stays as long as the node and its boot do, so a
// GPU that fell off the bus is still lost for the next agent pod. A node
// whose status.nodeInfo.bootID changes was rebooted: its double starts
// fresh (healthy GPUs, counters from 0) and its agent restarts. A deleted
// node drops its double.
//
// The node's fault requests (gpu_fault.go) are played on its double while
// an agent runs there; a fatal one also fails the node's GPU pods.

// healthAgentSimulator reconciles one node at a time.
type healthAgentSimulator struct {
	ctx    context.Context // the agents' parent: they end with the simulator
	client kubernetes.Interface
	pods   *nodeAgentPods
	nodes  listersv1.NodeLister

	mu  sync.Mutex
	gpu map[string]*simulatedGPUs // per node with a double
	// answered are, per node, the fault requests played (or refused) and
	// not yet seen gone from the node, with their answer: the cache may
	// lag the patch that removes them, and that patch may fail.
	answered map[string]map[string]*faultAnswer
}

// simulatedGPUs is one node's double, its boot and its agent.
type simulatedGPUs struct {
	node   types.UID // the Node object the double belongs to
	bootID string
	fleet  *nvmltest.Fleet // nil until an agent first runs in this boot
	gpus   int             // how many GPUs the double enumerates
	agent  *runningAgent   // nil while no agent pod runs
	// pending are XID requests the agent did not receive yet (it had not
	// registered for events): by id, since when.
	pending map[string]time.Time
}

// runningAgent is one healthagent.Run.
type runningAgent struct {
	pod    types.UID
	cancel context.CancelFunc
	done   chan struct{}
}

// RunHealthAgentSimulator runs the health agent of every health-agent pod
// on the cluster behind client until ctx ends (see the comment above
// healthAgentSimulator), and plays the fault requests made with
// RequestGPUFault. It logs to log. RunSimulators runs it.
func RunHealthAgentSimulator(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	s := &healthAgentSimulator{
		ctx:      ctx,
		client:   client,
		pods:     newNodeAgentPods("health-agent simulator", log, isHealthAgentPod),
		gpu:      map[string]*simulatedGPUs{},
		answered: map[string]map[string]*faultAnswer{},
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	nodeInformer := factory.Core().V1().Nodes()
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.nodeChanged,
		UpdateFunc: func(_, obj any) { s.nodeChanged(obj) },
		DeleteFunc: s.nodeDeleted,
	}); err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	s.nodes = nodeInformer.Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced) {
		return ctx.Err()
	}
	defer s.stopAll()
	return s.pods.run(ctx, client, 4, s.reconcile)
}

// isHealthAgentPod recognizes the agent's pods by what they run, as the
// lead's contract says: a container whose args[0] is "health-agent" and
// whose flags gpuhealth.ParseArgs accepts.
func isHealthAgentPod(pod *corev1.Pod) bool {
	_, ok := healthAgentSettings(pod)
	return ok
}

func healthAgentSettings(pod *corev1.Pod) (gpuhealth.Settings, bool) {
	for _, c := range pod.Spec.Containers {
		if len(c.Args) == 0 || c.Args[0] != gpuhealth.CommandName {
			continue
		}
		if settings, err := gpuhealth.ParseArgs(c.Args); err == nil {
			return settings, true
		}
	}
	return gpuhealth.Settings{}, false
}

// nodeChanged queues the node: it may have fault requests, a new boot ID,
// or have been registered again under its old name with its agent pod
// still bound to it (the pod garbage collector had not removed it), which
// no pod event would say. A reconcile of a node without an agent pod reads
// two caches and does nothing.
func (s *healthAgentSimulator) nodeChanged(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		s.pods.queue.Add(node.Name)
	}
}

func (s *healthAgentSimulator) nodeDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		s.pods.queue.Add(node.Name)
	}
}

// reconcile runs the agent of the node's running agent pod, if any, over
// the node's double, then plays the node's fault requests.
func (s *healthAgentSimulator) reconcile(ctx context.Context, name string) error {
	node, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		s.mu.Lock()
		g := s.gpu[name]
		delete(s.gpu, name)
		delete(s.answered, name)
		s.mu.Unlock()
		if g != nil {
			g.stopAgent()
			s.pods.log("node %s: deleted; its GPUs are gone", name)
		}
		return nil
	}
	if err != nil {
		return err
	}
	pod, settings, err := s.runningAgentPod(name)
	if err != nil {
		return err
	}

	s.mu.Lock()
	g := s.gpu[name]
	if g != nil && g.node != node.UID {
		// Deleted and registered again under the same name before this
		// reconcile: a new machine, whose GPUs owe nothing to the old one's.
		delete(s.gpu, name)
		delete(s.answered, name)
		s.mu.Unlock()
		g.stopAgent()
		s.pods.log("node %s: registered again; its GPUs start healthy", name)
		s.mu.Lock()
		g = nil
	}
	if g == nil && pod != nil {
		g = &simulatedGPUs{node: node.UID, bootID: node.Status.NodeInfo.BootID, pending: map[string]time.Time{}}
		s.gpu[name] = g
	}
	s.mu.Unlock()
	if g == nil {
		return s.playFaultRequests(ctx, node, nil)
	}

	if boot := node.Status.NodeInfo.BootID; boot != g.bootID {
		g.stopAgent()
		g.bootID, g.fleet = boot, nil
		s.pods.log("node %s: rebooted (boot ID %q): its GPUs start healthy", name, boot)
	}
	if g.agent != nil && (pod == nil || g.agent.pod != pod.UID) {
		g.stopAgent()
		s.pods.log("node %s: health agent stopped", name)
	}
	if pod != nil && g.agent == nil {
		if g.fleet == nil {
			g.fleet, g.gpus = newNodeFleet(node)
			// The GPUs drew power between the boot and the agent's start
			// (bootUptimeSteps of it), so a reset (energy back to 0) reads
			// as a counter that went backwards for as long as a test runs,
			// however soon after the start it comes.
			for range bootUptimeSteps {
				g.fleet.Advance()
			}
		}
		s.startAgent(name, g, pod, settings)
	}
	return s.playFaultRequests(ctx, node, g)
}

// runningAgentPod is the oldest agent pod Running on node, with its
// settings; nil when none is.
func (s *healthAgentSimulator) runningAgentPod(node string) (*corev1.Pod, gpuhealth.Settings, error) {
	pods, err := s.pods.agentPodsOn(node)
	if err != nil {
		return nil, gpuhealth.Settings{}, err
	}
	pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return !podRunning(p) })
	if len(pods) == 0 {
		return nil, gpuhealth.Settings{}, nil
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	settings, _ := healthAgentSettings(pods[0])
	return pods[0], settings, nil
}

// startAgent runs healthagent.Run for node over g's double until the agent
// is stopped or the simulator ends.
func (s *healthAgentSimulator) startAgent(node string, g *simulatedGPUs, pod *corev1.Pod, settings gpuhealth.Settings) {
	ctx, cancel := context.WithCancel(s.ctx)
	agent := &runningAgent{pod: pod.UID, cancel: cancel, done: make(chan struct{})}
	g.agent = agent
	telemetry := nvml.New(nvml.Options{Lib: g.fleet.Server})
	log := &linePrefixWriter{log: s.pods.log, prefix: "node " + node + ": health agent: "}
	fleet := g.fleet
	go func() {
		defer close(agent.done)
		defer func() { _ = telemetry.Close() }()
		go drawPower(ctx, fleet)
		err := healthagent.Run(ctx, healthagent.Options{
			NodeName:  node,
			Client:    s.client,
			Telemetry: telemetry,
			Settings:  settings,
			Log:       log,
		})
		if err != nil && ctx.Err() == nil {
			s.pods.log("node %s: health agent of pod %s/%s ended: %v", node, pod.Namespace, pod.Name, err)
		}
	}()
	s.pods.log("node %s: health agent of pod %s/%s started (%d GPUs, %s)", node, pod.Namespace, pod.Name, g.gpus, strings.Join(settings.Args()[1:], " "))
}

// drawPower moves the double's clock a step each second while its agent
// runs, so that its energy counters grow as a working GPU's do (from 0 at
// boot): a reset (RecoverGPU sets them back to 0) is then visible to the
// agent as a counter that went backwards.
// bootUptimeSteps are the double's steps (a second each) of uptime before
// the agent starts: ten minutes.
const bootUptimeSteps = 600

func drawPower(ctx context.Context, fleet *nvmltest.Fleet) {
	tick := time.NewTicker(fleet.StepDuration)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fleet.Advance()
		}
	}
}

// stopAgent ends g's agent, if one runs, and waits for it.
func (g *simulatedGPUs) stopAgent() {
	if g.agent == nil {
		return
	}
	g.agent.cancel()
	<-g.agent.done
	g.agent = nil
}

// stopAll ends every agent when the simulator ends.
func (s *healthAgentSimulator) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gpu {
		g.stopAgent()
	}
}

// maxDoubleGPUs is how many GPUs the NVML double has (a DGX A100's).
const maxDoubleGPUs = 8

// nodeGPUs is how many GPUs the node's driver would find: GPU Feature
// Discovery's count label, else its nvidia.com/gpu capacity, else its
// instance type's.
func nodeGPUs(node *corev1.Node) int {
	if n, err := strconv.Atoi(node.Labels[gpulabels.Count]); err == nil && n >= 0 {
		return n
	}
	if q, ok := node.Status.Capacity[gpulabels.ResourceName]; ok && q.Value() > 0 {
		return int(q.Value())
	}
	if it, ok := ec2catalog.Lookup(node.Labels[corev1.LabelInstanceTypeStable]); ok {
		return it.GPUCount
	}
	return 0
}

// newNodeFleet is the double of a freshly booted node and how many GPUs it
// enumerates: a DGX A100 cut to the node's GPU count (at most 8), or, for
// a node without GPUs, one whose driver is not loaded (0).
func newNodeFleet(node *corev1.Node) (*nvmltest.Fleet, int) {
	switch n := nodeGPUs(node); {
	case n <= 0:
		fleet := nvmltest.NewDGXA100()
		fleet.SetDriverLoaded(false)
		return fleet, 0
	case n >= maxDoubleGPUs:
		return nvmltest.NewDGXA100(), maxDoubleGPUs
	default:
		return nvmltest.NewDGXA100WithGPUs(n), n
	}
}

// linePrefixWriter logs each whole line written to it.
type linePrefixWriter struct {
	log    func(format string, args ...any)
	prefix string

	mu      sync.Mutex
	partial []byte
}

func (w *linePrefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.log("%s%s", w.prefix, w.partial[:i])
		w.partial = w.partial[i+1:]
	}
}

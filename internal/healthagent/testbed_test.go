package healthagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/healthagent"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// cluster is this package's testbed: a real API server. The nodes these
// tests create are plain Node objects (no kwok), so only the test and the
// agent change them.
var cluster *k8s.Cluster

func TestMain(m *testing.M) {
	c := k8s.New(k8s.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{c}}, func(*testbed.Testbed) { cluster = c }))
}

// nodeCounter names each test's node uniquely within the run.
var nodeCounter atomic.Int64

// testSettings sample fast and damp for a short interval, so a test takes
// seconds.
func testSettings() gpuhealth.Settings {
	s := gpuhealth.DefaultSettings()
	s.SampleInterval = 50 * time.Millisecond
	s.Damping = 200 * time.Millisecond
	return s
}

// newNode creates a GPU node named after the test with the GPU count label
// (8) and boot ID boot, and returns its name.
func newNode(t *testing.T, boot string, taints ...corev1.Taint) string {
	t.Helper()
	testbed.SkipIfUnavailable(t)
	name := fmt.Sprintf("gpu-health-%d", nodeCounter.Add(1))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{healthagent.LabelGPUCount: "8"}},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
	ctx := context.Background()
	client := cluster.Client()
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	setBootID(t, name, boot)
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// setBootID writes the node's status.nodeInfo.bootID, as a kubelet does at
// start.
func setBootID(t *testing.T, node, boot string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"nodeInfo": map[string]any{"bootID": boot}}})
	require.NoError(t, err)
	_, err = cluster.Client().CoreV1().Nodes().PatchStatus(context.Background(), node, patch)
	require.NoError(t, err)
}

// agentRun is one Run of the agent in a test.
type agentRun struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what it returned
}

// stop ends the Run and says what it returned.
func (r *agentRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		require.NoError(t, r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30 s after its context ended")
	}
}

// running fails the test if Run returned.
func (r *agentRun) running(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
		t.Fatalf("Run returned before its context ended: %v", r.err)
	default:
	}
}

// startAgent runs the agent for node on fleet through client (the
// cluster's when nil) until the test ends or stop.
func startAgent(t *testing.T, node string, fleet *nvmltest.Fleet, settings gpuhealth.Settings, client kubernetes.Interface) *agentRun {
	t.Helper()
	return startAgentLogging(t, node, fleet, settings, client, testLog{t})
}

// startAgentLogging is startAgent with the agent's log lines going to log.
func startAgentLogging(t *testing.T, node string, fleet *nvmltest.Fleet, settings gpuhealth.Settings, client kubernetes.Interface, log io.Writer) *agentRun {
	t.Helper()
	if client == nil {
		client = cluster.Client()
	}
	tel := nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	r := &agentRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = healthagent.Run(ctx, healthagent.Options{NodeName: node, Client: client, Telemetry: tel, Settings: settings, Log: log})
		_ = tel.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// testLog writes the agent's lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// fireXID fires an XID once the agent watches the fleet's events (FireXID
// reaches no one before it registered).
func fireXID(t *testing.T, fleet *nvmltest.Fleet, gpu int, xid uint64) {
	t.Helper()
	require.Eventually(t, func() bool { return fleet.FireXID(gpu, xid) > 0 }, 30*time.Second, 10*time.Millisecond,
		"the agent never registered for the fleet's events")
}

// waitSamples waits until the agent sampled fleet n more times (NVML's
// device count is read once a sample).
func waitSamples(t *testing.T, fleet *nvmltest.Fleet, n int) {
	t.Helper()
	from := fleet.Calls().ByMethod["DeviceGetCount"]
	require.Eventually(t, func() bool { return fleet.Calls().ByMethod["DeviceGetCount"] >= from+uint64(n) }, 30*time.Second, 10*time.Millisecond,
		"the agent stopped sampling")
}

// condition reads the node's AcceleratedHardwareReady condition; nil when
// it has none.
func condition(t *testing.T, node string) *corev1.NodeCondition {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == gpuhealth.ConditionType {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until the node's condition has status and reason,
// and returns it.
func waitCondition(t *testing.T, node string, status corev1.ConditionStatus, reason string) *corev1.NodeCondition {
	t.Helper()
	var last *corev1.NodeCondition
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		last = condition(t, node)
		if last != nil && last.Status == status && last.Reason == reason {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("node %s: condition %s never became %s/%s; last: %+v", node, gpuhealth.ConditionType, status, reason, last)
	return nil
}

// savedState is the agent's state annotation on node.
func savedState(t *testing.T, node string) string {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Annotations[healthagent.AnnotationState]
}

// nodeEvents lists the agent's Events on node, oldest first.
func nodeEvents(t *testing.T, node string) []corev1.Event {
	t.Helper()
	list, err := cluster.Client().CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node,
	})
	require.NoError(t, err)
	return list.Items
}

// waitEvent waits for an Event of eventType on node whose message starts
// with prefix.
func waitEvent(t *testing.T, node, eventType, prefix string) corev1.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		seen = seen[:0]
		for _, e := range nodeEvents(t, node) {
			if e.Type == eventType && e.Reason == gpuhealth.EventReason && strings.HasPrefix(e.Message, prefix) {
				return e
			}
			seen = append(seen, e.Type+" "+e.Message)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("node %s: no %s Event %q...; seen: %q", node, eventType, prefix, seen)
	return corev1.Event{}
}

// nodeWrite is one write of a node the agent sent: of its status (the
// condition) or of the node (annotations, taints), with its body.
type nodeWrite struct {
	status bool
	body   string
}

// recordingClient is a client of the cluster that records the agent's
// writes of node, in the order it sent them.
func recordingClient(t *testing.T, node string) (kubernetes.Interface, func() []nodeWrite) {
	t.Helper()
	var mu sync.Mutex
	var writes []nodeWrite
	client := clientWith(t, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			path := strings.TrimSuffix(r.URL.Path, "/status")
			if (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.HasSuffix(path, "/nodes/"+node) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				r.Body = io.NopCloser(strings.NewReader(string(body)))
				mu.Lock()
				writes = append(writes, nodeWrite{status: path != r.URL.Path, body: string(body)})
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return client, func() []nodeWrite {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(writes)
	}
}

// signalLog writes the agent's lines to the test log and closes seen at
// the first line that contains want.
type signalLog struct {
	t    *testing.T
	want string
	once sync.Once
	seen chan struct{}
}

func newSignalLog(t *testing.T, want string) *signalLog {
	return &signalLog{t: t, want: want, seen: make(chan struct{})}
}

func (l *signalLog) Write(b []byte) (int, error) {
	if strings.Contains(string(b), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return testLog{l.t}.Write(b)
}

// clientWith is a client of the cluster whose transport wrap wraps.
func clientWith(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) kubernetes.Interface {
	t.Helper()
	cfg := cluster.RESTConfig()
	cfg.WrapTransport = wrap
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// statusWrites counts the writes of a node's status (the condition).
func statusWrites(writes []nodeWrite) int {
	n := 0
	for _, w := range writes {
		if w.status {
			n++
		}
	}
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// proxy is a TCP proxy in front of the API server that a test can close
// and open again on the same address, so a client sees the API server go
// away and come back.
type proxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{t: t, target: target, addr: ln.Addr().String()}
	require.NoError(t, ln.Close())
	t.Cleanup(p.close)
	return p
}

// open serves on the proxy's address.
func (p *proxy) open() {
	ln, err := net.Listen("tcp", p.addr)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
}

// close stops serving and cuts every connection: the API server is
// unreachable.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// proxiedClient is a client of the cluster through p.
func proxiedClient(t *testing.T, p *proxy) kubernetes.Interface {
	t.Helper()
	cfg := cluster.RESTConfig()
	target := strings.TrimPrefix(cfg.Host, "https://")
	require.Equal(t, p.target, target)
	cfg.Host = "https://" + p.addr
	cfg.Timeout = 2 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// apiServerAddress is the API server's host:port.
func apiServerAddress() string {
	return strings.TrimPrefix(cluster.RESTConfig().Host, "https://")
}

package kube

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// hubLinger is how long an informer nobody uses keeps running. Terraform
// starts a resource's create as soon as a slot of -parallelism frees, so the
// next wait in a namespace typically registers within a create's round trip
// (milliseconds to a second or two on a loaded machine) of the previous one
// ending: ten seconds bridges those gaps, and the waves of a 500-resource
// apply, without a LIST and a new WATCH each time, while a provider that has
// stopped waiting gives its watches back soon after.
const hubLinger = 10 * time.Second

// informerHub shares the informers of one Cluster among its waits: one
// client-go SharedIndexInformer per (kind, namespace), started by the first
// wait that needs it, reference counted, and stopped hubLinger after the
// last one let it go. Waits register event handlers on it (hub_events.go)
// instead of a LIST and a WATCH of their own, so 200 concurrent waits in one
// namespace cost one watch per kind, not 200.
//
// The informer is client-go's (k8s.io/client-go tools/cache,
// shared_informer.go): its reflector lists, then watches from the list's
// resourceVersion, and when a watch closes (the API server's watch timeout,
// a dropped connection) watches again from the last resourceVersion it saw,
// relisting when that is too old (410 Gone) — a wait registered on it sees
// no gap. Every list is a consistent read (consistentList).
type informerHub struct {
	client kubernetes.Interface
	linger time.Duration

	mu      sync.Mutex
	running map[hubKey]*hubInformer
	// started counts the informers started so far, for tests.
	started int
}

// hubInformer is one running informer and who uses it.
type hubInformer struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
	refs     int
	idle     *time.Timer
}

func newInformerHub(client kubernetes.Interface, linger time.Duration) *informerHub {
	return &informerHub{client: client, linger: linger, running: map[hubKey]*hubInformer{}}
}

// informers is c's hub, made on first use.
func (c *Cluster) informers() *informerHub {
	c.hubOnce.Do(func() { c.hub = newInformerHub(c.client, hubLinger) })
	return c.hub
}

// acquire returns the running informer of key, starting it when none runs,
// and the function that lets it go (call it once the wait is over; more
// calls do nothing). The informer may not have synced yet.
func (h *informerHub) acquire(key hubKey) (cache.SharedIndexInformer, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in := h.running[key]
	if in == nil {
		in = h.start(key)
		h.running[key] = in
	}
	if in.idle != nil {
		in.idle.Stop() // a callback already fired sees refs > 0 and leaves it
		in.idle = nil
	}
	in.refs++
	return in.informer, sync.OnceFunc(func() { h.release(key, in) })
}

func (h *informerHub) release(key hubKey, in *hubInformer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in.refs--
	if in.refs > 0 {
		return
	}
	in.idle = time.AfterFunc(h.linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if in.refs == 0 && h.running[key] == in {
			delete(h.running, key)
			close(in.stop)
		}
	})
}

// start runs a new informer for key. Its requests end once it has
// stopped: canceled earlier, the reflector would log the canceled
// context as a list or watch error.
func (h *informerHub) start(key hubKey) *hubInformer {
	requests, cancel := context.WithCancel(context.Background())
	informer := cache.NewSharedIndexInformerWithOptions(key.listWatch(requests, h.client), key.kind.example(),
		cache.SharedIndexInformerOptions{ObjectDescription: key.String()})
	in := &hubInformer{informer: informer, stop: make(chan struct{})}
	go func() {
		defer cancel()
		informer.Run(in.stop)
	}()
	h.started++
	return in
}

// runningFor returns key's informer when one runs and has synced, for a
// diagnosis that reads from the cache when it can; nil otherwise.
func (h *informerHub) runningFor(key hubKey) cache.SharedIndexInformer {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in := h.running[key]; in != nil && in.informer.HasSynced() {
		return in.informer
	}
	return nil
}

// stats are how many informers run now and how many were started.
func (h *informerHub) stats() (running, started int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.running), h.started
}

// users is how many waits hold key's informer now, for tests.
func (h *informerHub) users(key hubKey) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in := h.running[key]; in != nil {
		return in.refs
	}
	return 0
}

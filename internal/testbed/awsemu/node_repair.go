package awsemu

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Node auto repair of managed node groups (node_repair_policy.go says
// what EKS does and where that comes from): an informer follows the
// groups' nodes; a node whose watched condition stays unhealthy for the
// rule's wait gets the rule's action, within the group's parallel limit
// and unless too many of its nodes are unhealthy. Nothing polls: node
// events and one timer, set to the next deadline, drive it.

// nodegroupLabel is the label EKS puts on every node of a managed group.
const nodegroupLabel = "eks.amazonaws.com/nodegroup"

// NodeRepair is one repair the emulator started.
type NodeRepair struct {
	Nodegroup  string `json:"nodegroup"`
	Node       string `json:"node"`
	InstanceID string `json:"instanceId"`
	// Condition and Reason are the unhealthy condition the repair acts on.
	Condition string    `json:"condition"`
	Reason    string    `json:"reason"`
	Action    string    `json:"action"` // Replace or Reboot
	Started   time.Time `json:"started"`
	// Finished is zero while the repair is in progress: a replacement
	// until the new instance's node registers, a reboot until the node's
	// new boot ID is written.
	Finished time.Time `json:"finished,omitzero"`
	// ReplacementNode and ReplacementInstanceID are the instance the Auto
	// Scaling group launched for a Replace ("" when it could launch none).
	ReplacementNode       string `json:"replacementNode,omitempty"`
	ReplacementInstanceID string `json:"replacementInstanceId,omitempty"`
	// BootID is a Reboot's new status.nodeInfo.bootID.
	BootID string `json:"bootId,omitempty"`
	// Error is why a reboot could not be written.
	Error string `json:"error,omitempty"`

	group *nodegroup
}

// NodeRepairStatus is a node group's repair state (NodeRepairStatus).
type NodeRepairStatus struct {
	// Paused says why no repair starts now ("" when repairs may start).
	Paused  string       `json:"paused,omitempty"`
	Repairs []NodeRepair `json:"repairs"`
}

// repairState is node auto repair's part of the state.
type repairState struct {
	minute   time.Duration // how long one minute of wait lasts
	watching bool
	nodes    map[string]*observedNode // by node name
	active   map[string]*NodeRepair   // in progress, by node name
	timer    *time.Timer
}

func newRepairState(minute time.Duration) repairState {
	return repairState{minute: minute, nodes: map[string]*observedNode{}, active: map[string]*NodeRepair{}}
}

// observedNode is what the informer last saw of a node.
type observedNode struct {
	bad        map[string]badCondition // the unhealthy watched conditions, by type
	rebootedAt time.Time               // the last repair reboot: waits count from it
}

type badCondition struct {
	status     corev1.ConditionStatus
	reason     string
	transition time.Time // lastTransitionTime: a new one starts a new episode
	since      time.Time // when the emulator saw the episode begin
}

// watchNodes starts the informer on the groups' nodes once the cluster is
// reachable; later calls do nothing.
func (e *Emulator) watchNodes() {
	if e.kube == nil {
		return
	}
	client := e.kube.client()
	if client == nil {
		return
	}
	e.mu.Lock()
	started := e.st.repair.watching
	e.st.repair.watching = true
	e.mu.Unlock()
	if started {
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = nodegroupLabel
	}))
	informer := factory.Core().V1().Nodes().Informer()
	// Watch errors go to the emulator's log, not client-go's standard
	// error: the cluster stops before the emulator when the testbed does.
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() == nil {
			e.log.Printf("node auto repair: watching nodes: %v", err)
		}
	})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    e.observeNode,
		UpdateFunc: func(_, obj any) { e.observeNode(obj) },
		DeleteFunc: e.forgetNode,
	})
	if err != nil {
		e.log.Printf("node auto repair: watching nodes: %v", err)
		return
	}
	factory.Start(e.ctx.Done())
}

// observeNode records a node's unhealthy watched conditions, finishes the
// replacement it is, and re-evaluates repairs.
func (e *Emulator) observeNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &e.st.repair
	o := r.nodes[node.Name]
	if o == nil {
		o = &observedNode{}
		r.nodes[node.Name] = o
	}
	bad := map[string]badCondition{}
	for _, w := range watchedConditions {
		i := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return string(c.Type) == w.conditionType })
		if i < 0 || !w.unhealthyIn(node.Status.Conditions[i].Status) {
			continue
		}
		c := node.Status.Conditions[i]
		b := badCondition{status: c.Status, reason: c.Reason, transition: c.LastTransitionTime.Time, since: now}
		if prev, ok := o.bad[w.conditionType]; ok && prev.status == b.status && prev.transition.Equal(b.transition) {
			b.since = prev.since
		}
		bad[w.conditionType] = b
	}
	o.bad = bad
	for _, rec := range r.active {
		if rec.Action == repairReplace && rec.ReplacementNode == node.Name {
			e.finishRepair(rec, now, "replacement node "+node.Name+" registered")
		}
	}
	e.evaluateRepairs(now)
}

func (e *Emulator) forgetNode(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.st.repair.nodes, node.Name)
	e.evaluateRepairs(time.Now())
}

// candidate is a node's next repair: the condition whose rule comes due
// first (NoAction rules never do).
type candidate struct {
	node      groupNode
	condition string
	reason    string
	action    string
	due       time.Time
}

func nextRepair(c *nodeRepairConfig, node groupNode, o *observedNode, minute time.Duration) (candidate, bool) {
	var best candidate
	found := false
	for _, w := range watchedConditions {
		b, ok := o.bad[w.conditionType]
		if !ok {
			continue
		}
		rule := ruleFor(c, w, b.reason, minute)
		if rule.action == repairNoAction {
			continue
		}
		since := b.since
		if o.rebootedAt.After(since) {
			since = o.rebootedAt
		}
		due := since.Add(rule.wait)
		if !found || due.Before(best.due) {
			best = candidate{node: node, condition: w.conditionType, reason: b.reason, action: rule.action, due: due}
			found = true
		}
	}
	return best, found
}

// evaluateRepairs starts the repairs that are due and may start, and sets
// the timer to the next deadline. e.mu is held.
func (e *Emulator) evaluateRepairs(now time.Time) {
	r := &e.st.repair
	for _, rec := range r.active {
		if ng := rec.group; e.st.nodegroups[nodegroupKey(ng.doc.ClusterName, ng.doc.NodegroupName)] != ng || (rec.Action == repairReplace &&
			!slices.ContainsFunc(ng.nodes, func(n groupNode) bool { return n.nodeName == rec.ReplacementNode })) {
			e.finishRepair(rec, now, "the replacement instance left the group")
		}
	}
	var next time.Time
	for _, key := range slices.Sorted(maps.Keys(e.st.nodegroups)) {
		ng := e.st.nodegroups[key]
		cfg := ng.doc.NodeRepair
		if !repairEnabled(cfg) || (ng.doc.Status != statusActive && ng.doc.Status != statusUpdating) {
			ng.repairPaused = ""
			continue
		}
		inFlight := 0
		for _, rec := range r.active {
			if rec.group == ng {
				inFlight++
			}
		}
		unhealthy := 0
		var due []candidate
		for _, n := range ng.nodes {
			o := r.nodes[n.nodeName]
			if o == nil || len(o.bad) == 0 {
				continue
			}
			unhealthy++
			if r.active[n.nodeName] != nil {
				continue
			}
			c, ok := nextRepair(cfg, n, o, r.minute)
			switch {
			case !ok:
			case c.due.After(now):
				if next.IsZero() || c.due.Before(next) {
					next = c.due
				}
			default:
				due = append(due, c)
			}
		}
		if why := repairPause(cfg, unhealthy, len(ng.nodes)); why != "" {
			if ng.repairPaused != why {
				e.log.Printf("node group %s: node auto repair paused: %s; %d repairs in progress continue", ng.doc.NodegroupName, why, inFlight)
				ng.repairPaused = why
			}
			continue
		}
		if ng.repairPaused != "" {
			e.log.Printf("node group %s: node auto repair resumed: %d of %d nodes unhealthy", ng.doc.NodegroupName, unhealthy, len(ng.nodes))
			ng.repairPaused = ""
		}
		slices.SortFunc(due, func(a, b candidate) int {
			return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.node.nodeName, b.node.nodeName))
		})
		limit := repairParallel(cfg, unhealthy)
		for _, c := range due {
			if limit > 0 && inFlight >= limit {
				break
			}
			e.startRepair(key, ng, c, now)
			inFlight++
		}
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if !next.IsZero() && e.ctx.Err() == nil {
		r.timer = time.AfterFunc(time.Until(next), func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.ctx.Err() == nil {
				e.evaluateRepairs(time.Now())
			}
		})
	}
}

// startRepair acts on a node: Replace terminates its instance and the
// Auto Scaling group launches another (a new instance and node name, the
// old node leaving the cluster); Reboot writes a new boot ID on the same
// node. e.mu is held.
func (e *Emulator) startRepair(key string, ng *nodegroup, c candidate, now time.Time) {
	r := &e.st.repair
	rec := &NodeRepair{
		Nodegroup: ng.doc.NodegroupName, Node: c.node.nodeName, InstanceID: c.node.instanceID,
		Condition: c.condition, Reason: c.reason, Action: c.action, Started: now, group: ng,
	}
	ng.repairs = append(ng.repairs, rec)
	r.active[rec.Node] = rec
	e.log.Printf("node group %s: node auto repair: %s node %s (instance %s): %s %s",
		ng.doc.NodegroupName, c.action, rec.Node, rec.InstanceID, c.condition, c.reason)
	switch c.action {
	case repairReplace:
		ng.nodes = slices.DeleteFunc(ng.nodes, func(n groupNode) bool { return n.nodeName == c.node.nodeName })
		before := len(ng.nodes)
		e.scaleTo(key, ng, int(*ng.doc.ScalingConfig.DesiredSize))
		e.removeNodes([]groupNode{c.node})
		if len(ng.nodes) > before {
			rec.ReplacementNode, rec.ReplacementInstanceID = ng.nodes[before].nodeName, ng.nodes[before].instanceID
			e.log.Printf("node group %s: instance %s replaces %s (node %s)", ng.doc.NodegroupName, rec.ReplacementInstanceID, rec.InstanceID, rec.ReplacementNode)
		} else {
			e.finishRepair(rec, now, "the Auto Scaling group launched no replacement")
		}
	case repairReboot:
		rec.BootID = newUUID()
		go e.reboot(rec)
	}
}

// reboot writes the node's new boot ID, as a node that restarted
// reports it.
func (e *Emulator) reboot(rec *NodeRepair) {
	ctx, cancel := context.WithTimeout(e.ctx, kubeTimeout)
	defer cancel()
	patch := []byte(`{"status":{"nodeInfo":{"bootID":"` + rec.BootID + `"}}}`)
	var err error
	if client := e.kube.client(); client != nil {
		_, err = client.CoreV1().Nodes().Patch(ctx, rec.Node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if err != nil {
		rec.Error = err.Error()
		e.finishRepair(rec, now, "reboot failed: "+err.Error())
	} else {
		if o := e.st.repair.nodes[rec.Node]; o != nil {
			o.rebootedAt = now
		}
		e.finishRepair(rec, now, "new boot ID "+rec.BootID)
	}
	e.evaluateRepairs(now)
}

// finishRepair ends a repair in progress. e.mu is held.
func (e *Emulator) finishRepair(rec *NodeRepair, now time.Time, how string) {
	if e.st.repair.active[rec.Node] != rec {
		return
	}
	delete(e.st.repair.active, rec.Node)
	rec.Finished = now
	e.log.Printf("node group %s: node auto repair: %s of node %s finished: %s", rec.Nodegroup, rec.Action, rec.Node, how)
}

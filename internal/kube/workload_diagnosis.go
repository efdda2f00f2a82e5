package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// describeUnschedulable explains a pod that no node can ever take: the
// node-by-node facts, what the scheduler itself said, and what would help.
func (c *Cluster) describeUnschedulable(ctx context.Context, pod *corev1.Pod, d Diagnosis) string {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s cannot be scheduled and no node can ever run it as written: %s.", pod.Name, d)
	if msg := c.schedulerMessage(ctx, pod); msg != "" {
		fmt.Fprintf(&b, " The scheduler says: %s", msg)
	}
	b.WriteString(" " + d.Remedy())
	return b.String()
}

// describeReplicasBeyondCapacity explains a Deployment pod that waits for
// GPUs only the Deployment's own replicas could free: more replicas than
// the nodes can ever hold at once (beyond, from ReplicasBeyondCapacity).
func (c *Cluster) describeReplicasBeyondCapacity(ctx context.Context, pod *corev1.Pod, d Diagnosis, beyond string, capacity int64) string {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s cannot be scheduled: %s. For this pod, %s.", pod.Name, beyond, d)
	if msg := c.schedulerMessage(ctx, pod); msg != "" {
		fmt.Fprintf(&b, " The scheduler says: %s", msg)
	}
	fmt.Fprintf(&b, " %s", replicasRemedy(capacity))
	return b.String()
}

func replicasRemedy(capacity int64) string {
	lower := fmt.Sprintf("Lower deployment.replicas to %d or fewer, or change", capacity)
	if capacity == 0 {
		lower = "Change"
	}
	return lower + " the gpu block (products, min_memory_gib, min_compute_capability, count), node_selector or tolerations so that more nodes match, or add nodes that match."
}

// describeWaitingPods explains why a workload is not done yet, from the
// hub's caches when they run (podsOf, nodeFacts): the state of its pods (a
// crash-looping container with its last termination), and for a pod that
// waits to be scheduled, the scheduler's message and the node-by-node
// facts.
func (c *Cluster) describeWaitingPods(ctx context.Context, spec WorkloadSpec, podSelector string) string {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	pods, err := c.podsOf(ctx, spec.Namespace, podSelector)
	if err != nil {
		return "its pods could not be read: " + err.Error()
	}
	if len(pods) == 0 {
		return "it has no pods yet (see `kubectl describe` of the workload for quota or admission errors)"
	}
	var states []string
	var pending *corev1.Pod
	for i := range pods {
		p := &pods[i]
		state := string(p.Status.Phase)
		if p.Spec.NodeName != "" {
			state += " on " + p.Spec.NodeName
		}
		if unschedulable, _ := PodUnschedulable(p); unschedulable {
			state = "unschedulable"
			if pending == nil {
				pending = p
			}
		}
		states = append(states, p.Name+" "+state+describeContainerTrouble(p))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pods: %s.", strings.Join(states, ", "))
	health := newGPUHealthNotes(time.Now())
	for i := range pods {
		c.notePodNodes(ctx, health, &pods[i])
	}
	b.WriteString(health.sentence())
	if pending == nil {
		return b.String()
	}
	if msg := c.schedulerMessage(ctx, pending); msg != "" {
		fmt.Fprintf(&b, " The scheduler says about %s: %s", pending.Name, msg)
	}
	if spec.Pod.GPU.DRA() {
		d, nodes, err := c.diagnoseDRA(ctx, spec)
		if err != nil {
			fmt.Fprintf(&b, " The devices could not be read: %v.", err)
			return b.String()
		}
		fmt.Fprintf(&b, " %s.", capitalize(d.String()))
		health.noteCandidates(d, nodes)
		b.WriteString(health.sentence())
		if !d.CouldEverFit() {
			b.WriteString(" " + d.Remedy())
		} else if waits := d.WaitingFor(); waits != "" {
			b.WriteString(" It can run once " + waits + ", or raise the timeout.")
		}
		return b.String()
	}
	nodes, err := c.nodeFacts(ctx, spec.GPURequest().Resource)
	if err != nil {
		fmt.Fprintf(&b, " The nodes could not be read: %v.", err)
		return b.String()
	}
	req := spec.GPURequest()
	d := Diagnose(nodes, req)
	fmt.Fprintf(&b, " %s.", capitalize(d.String()))
	health.noteCandidates(d, nodes)
	b.WriteString(health.sentence())
	b.WriteString(" " + waitAdvice(spec, nodes, req, d))
	return b.String()
}

// waitAdvice says what the waiting pod waits for, true of the workload as
// a whole: a Deployment's replicas past what the nodes can ever hold wait
// for nothing, those past what they hold now wait for nodes to come back,
// and only the rest for GPUs to be freed (by other workloads, or by a
// previous revision's pods).
func waitAdvice(spec WorkloadSpec, nodes []NodeFacts, req GPURequest, d Diagnosis) string {
	if !d.CouldEverFit() {
		return d.Remedy()
	}
	if spec.Kind == WorkloadDeployment {
		capacity := CapacityFor(nodes, req)
		replicas := deploymentReplicas(spec)
		if beyond := ReplicasBeyondCapacity(capacity, req, replicas); beyond != "" {
			return capitalize(beyond) + ". " + replicasRemedy(capacity.Pods)
		}
		if waiting := ReplicasWaitingForNodes(capacity, req, replicas); waiting != "" {
			return waiting + ", or raise the timeout."
		}
	}
	waits := d.WaitingFor()
	switch {
	case waits == "":
		return "A node has room for it now: the scheduler had not placed it yet; raise the timeout."
	case d.group(reasonBusy) != nil && d.group(reasonNotReady) == nil && d.group(reasonCordoned) == nil && d.group(reasonPluginStarting) == nil &&
		d.group(reasonGPUUnhealthy) == nil:
		return "Nodes that match are busy: it runs once " + waits + ", or raise the timeout."
	}
	return "It can run once " + waits + ", or raise the timeout."
}

// describeContainerTrouble says why a pod's containers do not run, e.g.
// " (container main CrashLoopBackOff after 4 restarts; last ended Error,
// exit code 3: CUDA error: no CUDA-capable device is detected)", or ""
// when they are fine.
func describeContainerTrouble(pod *corev1.Pod) string {
	var parts []string
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil || w.Reason == "" || w.Reason == "ContainerCreating" || w.Reason == "PodInitializing" {
			continue
		}
		part := fmt.Sprintf("container %s %s", cs.Name, w.Reason)
		if cs.RestartCount > 0 {
			part += fmt.Sprintf(" after %d restarts", cs.RestartCount)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			part += fmt.Sprintf("; last ended %s, exit code %d", t.Reason, t.ExitCode)
			if msg := strings.TrimSpace(t.Message); msg != "" {
				part += ": " + msg
			}
		} else if msg := strings.TrimSpace(w.Message); msg != "" {
			part += ": " + msg
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// schedulerMessage is the newest FailedScheduling event of pod, or the
// message of its PodScheduled condition when the events are gone.
func (c *Cluster) schedulerMessage(ctx context.Context, pod *corev1.Pod) string {
	msg, err := FailedSchedulingMessage(ctx, c.client, pod)
	if err == nil && msg != "" {
		return strings.TrimSpace(msg)
	}
	_, msg = PodUnschedulable(pod)
	return strings.TrimSpace(msg)
}

// describeJobFailure says why a Job failed: its Failed condition's reason
// and message, and how its last failed pod ended.
func (c *Cluster) describeJobFailure(ctx context.Context, job *batchv1.Job) string {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	cond, _ := jobCondition(job, batchv1.JobFailed)
	var b strings.Builder
	fmt.Fprintf(&b, "the Job failed (%s)", cond.Reason)
	if cond.Message != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimSuffix(cond.Message, "."))
	}
	b.WriteString(".")
	pods, err := c.podsOf(ctx, job.Namespace, jobPodSelector(job))
	if err != nil {
		return b.String()
	}
	for i := len(pods) - 1; i >= 0; i-- {
		if desc := describeTermination(&pods[i]); desc != "" {
			b.WriteString(" " + desc)
			health := newGPUHealthNotes(time.Now())
			c.notePodNodes(ctx, health, &pods[i])
			b.WriteString(health.sentence())
			break
		}
	}
	return b.String()
}

// describeTermination says how a pod's containers ended, e.g. "Its last pod
// train-x7k2p on gpu-p5-0 ended: container main Error, exit code 1: CUDA
// out of memory.", or "" when no container terminated.
func describeTermination(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode == 0 {
			continue
		}
		where := pod.Name
		if pod.Spec.NodeName != "" {
			where += " on " + pod.Spec.NodeName
		}
		desc := fmt.Sprintf("Its last failed pod %s ended: container %s %s, exit code %d", where, cs.Name, t.Reason, t.ExitCode)
		if msg := strings.TrimSpace(t.Message); msg != "" {
			desc += ": " + msg
		}
		return desc + "."
	}
	if pod.Status.Phase == corev1.PodFailed && pod.Status.Reason != "" {
		return fmt.Sprintf("Its last failed pod %s ended: %s: %s.", pod.Name, pod.Status.Reason, strings.TrimSuffix(pod.Status.Message, "."))
	}
	return ""
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

package awsemu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testRepairMinute is the repair minute of this package's emulator
// (main_test.go): EKS's 10-minute wait for AcceleratedHardwareReady is
// half a second.
const testRepairMinute = 50 * time.Millisecond

// repairGroup creates a GPU node group of n nodes with this repair
// configuration (nil: none), deleted at the end, and returns its nodes.
func repairGroup(t *testing.T, name string, n int32, cfg *ekstypes.NodeRepairConfig) []corev1.Node {
	t.Helper()
	c := testClients()
	deleteGroupAtEnd(t, name)
	in := gpuGroupInput(name, "g6.xlarge", "AL2023_x86_64_NVIDIA", 0, n, n+1)
	in.NodeRepairConfig = cfg
	if _, err := c.eks.CreateNodegroup(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	return waitGroupNodes(t, name, int(n))
}

// repairOn is an enabled repair configuration with these overrides of
// AcceleratedHardwareReady (reason, minutes, action).
func repairOn(overrides ...ekstypes.NodeRepairConfigOverrides) *ekstypes.NodeRepairConfig {
	return &ekstypes.NodeRepairConfig{Enabled: aws.Bool(true), NodeRepairConfigOverrides: overrides}
}

func override(reason string, minutes int32, action ekstypes.RepairAction) ekstypes.NodeRepairConfigOverrides {
	return ekstypes.NodeRepairConfigOverrides{NodeMonitoringCondition: aws.String(conditionAcceleratedHardware),
		NodeUnhealthyReason: aws.String(reason), MinRepairWaitTimeMins: aws.Int32(minutes), RepairAction: action}
}

// setAccelerated writes the node's AcceleratedHardwareReady condition
// as a health agent would (a status patch), and returns when it was sent.
func setAccelerated(t *testing.T, node string, status corev1.ConditionStatus, reason string) time.Time {
	t.Helper()
	sent := time.Now()
	now := metav1.NewTime(sent)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: conditionAcceleratedHardware, Status: status, Reason: reason, Message: "set by the test",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Client().CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	return sent
}

func repairStatus(t *testing.T, name string) NodeRepairStatus {
	t.Helper()
	s, err := emu.NodeRepairStatus(emu.ClusterName(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitRepairs waits until the group has n finished repairs and returns
// them.
func waitRepairs(t *testing.T, name string, n int) []NodeRepair {
	t.Helper()
	var repairs []NodeRepair
	eventually(t, fmt.Sprintf("%d finished repairs in node group %s", n, name), func() error {
		repairs = repairStatus(t, name).Repairs
		finished := 0
		for _, r := range repairs {
			if !r.Finished.IsZero() {
				finished++
			}
		}
		if finished < n {
			return fmt.Errorf("repairs %+v", repairs)
		}
		return nil
	})
	return repairs
}

func nodeNames(nodes []corev1.Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	slices.Sort(names)
	return names
}

func TestRepairReplacesANodeWhoseGPUStaysUnhealthyPastTheWait(t *testing.T) {
	requireTestbed(t)
	const name = "repair-replace"
	nodes := repairGroup(t, name, 2, repairOn())
	sick := nodes[0].Name
	sent := setAccelerated(t, sick, corev1.ConditionFalse, "NvidiaXID79Error")

	repairs := waitRepairs(t, name, 1)
	r := repairs[0]
	if r.Node != sick || r.Action != repairReplace || r.Reason != "NvidiaXID79Error" || r.Condition != conditionAcceleratedHardware {
		t.Fatalf("repair %+v, want Replace of %s for NvidiaXID79Error", r, sick)
	}
	// EKS's default wait for AcceleratedHardwareReady: 10 minutes.
	if waited := r.Started.Sub(sent); waited < 10*testRepairMinute {
		t.Errorf("replaced %s after the condition was set, before the 10-minute wait (%s)", waited, 10*testRepairMinute)
	}
	if r.ReplacementNode == "" || r.ReplacementNode == sick || r.ReplacementInstanceID == r.InstanceID {
		t.Fatalf("replacement %q (%s) for %s (%s)", r.ReplacementNode, r.ReplacementInstanceID, sick, r.InstanceID)
	}
	// The group is back at its desired size with a healthy new node, and
	// the old one has left the cluster.
	eventually(t, "the old node to leave", func() error {
		if names := nodeNames(groupNodes(t, name)); slices.Contains(names, sick) || !slices.Contains(names, r.ReplacementNode) || len(names) != 2 {
			return fmt.Errorf("nodes %v", names)
		}
		return nil
	})
	waitGroupNodes(t, name, 2)
	replacement, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), r.ReplacementNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range replacement.Status.Conditions {
		if c.Type == conditionAcceleratedHardware && c.Status == corev1.ConditionFalse {
			t.Errorf("the replacement node is born unhealthy: %+v", c)
		}
	}

	// What EKS and Auto Scaling report: the group ACTIVE at its size, the
	// old instance gone and the new one in service.
	var described struct{ Nodegroup struct{ Status string } }
	awsCLI(t, &described, "eks", "describe-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name)
	if described.Nodegroup.Status != "ACTIVE" {
		t.Errorf("describe-nodegroup status %s after a repair, want ACTIVE", described.Nodegroup.Status)
	}
	var groups struct {
		AutoScalingGroups []struct {
			DesiredCapacity int
			Instances       []struct{ InstanceId, LifecycleState string }
		}
	}
	awsCLI(t, &groups, "autoscaling", "describe-auto-scaling-groups", "--filters", "Name=tag:eks:nodegroup-name,Values="+name)
	if len(groups.AutoScalingGroups) != 1 {
		t.Fatalf("Auto Scaling groups of %s: %+v", name, groups)
	}
	var ids []string
	for _, i := range groups.AutoScalingGroups[0].Instances {
		ids = append(ids, i.InstanceId)
	}
	if len(ids) != groups.AutoScalingGroups[0].DesiredCapacity || slices.Contains(ids, r.InstanceID) || !slices.Contains(ids, r.ReplacementInstanceID) {
		t.Errorf("instances %v (desired %d): want %s replaced by %s", ids, groups.AutoScalingGroups[0].DesiredCapacity, r.InstanceID, r.ReplacementInstanceID)
	}
}

func TestRepairClockStartsAgainWhenTheConditionRecovers(t *testing.T) {
	requireTestbed(t)
	const name = "repair-recovers"
	// 40 minutes: long enough that the recovery below comes first.
	nodes := repairGroup(t, name, 2, repairOn(override("NvidiaXID79Error", 40, ekstypes.RepairActionReplace)))
	recovers, stays := nodes[0].Name, nodes[1].Name
	setAccelerated(t, recovers, corev1.ConditionFalse, "NvidiaXID79Error")
	setAccelerated(t, recovers, corev1.ConditionTrue, "NvidiaGPUIsReady")
	setAccelerated(t, stays, corev1.ConditionFalse, "NvidiaXID79Error")

	// stays came due after recovers would have: when it is replaced,
	// recovers must not be.
	repairs := waitRepairs(t, name, 1)
	if len(repairs) != 1 || repairs[0].Node != stays {
		t.Fatalf("repairs %+v, want only %s's", repairs, stays)
	}
	if !slices.Contains(nodeNames(groupNodes(t, name)), recovers) {
		t.Errorf("%s recovered before the wait and was removed anyway", recovers)
	}

	// Unhealthy again: the wait counts from now, not from the first time.
	again := setAccelerated(t, recovers, corev1.ConditionFalse, "NvidiaXID79Error")
	repairs = waitRepairs(t, name, 2)
	if r := repairs[1]; r.Node != recovers || r.Started.Sub(again) < 40*testRepairMinute {
		t.Errorf("second repair %+v: want %s replaced 40 minutes after it failed again (%s)", r, recovers, again)
	}
}

func TestRepairRebootsWithANewBootIDAndNoActionLeavesTheNode(t *testing.T) {
	requireTestbed(t)
	const name = "repair-reboot"
	nodes := repairGroup(t, name, 3, repairOn(
		override("NvidiaXID79Error", 1, ekstypes.RepairActionReboot),
		override("NvidiaXID13Error", 1, ekstypes.RepairActionNoAction),
		override("NvidiaXID74Error", 2, ekstypes.RepairActionReplace)))
	rebooted, untouched, witness := nodes[0], nodes[1], nodes[2]
	setAccelerated(t, untouched.Name, corev1.ConditionFalse, "NvidiaXID13Error")
	setAccelerated(t, rebooted.Name, corev1.ConditionFalse, "NvidiaXID79Error")
	setAccelerated(t, witness.Name, corev1.ConditionFalse, "NvidiaXID74Error")

	// The condition stays False here (no agent clears it on the new boot
	// ID), so the node is rebooted again after each wait: every repair of
	// it is a Reboot.
	var repairs []NodeRepair
	eventually(t, "a reboot and a replacement", func() error {
		repairs = repairStatus(t, name).Repairs
		if !slices.ContainsFunc(repairs, func(r NodeRepair) bool { return r.Node == witness.Name && !r.Finished.IsZero() }) ||
			!slices.ContainsFunc(repairs, func(r NodeRepair) bool { return r.Node == rebooted.Name && !r.Finished.IsZero() }) {
			return fmt.Errorf("repairs %+v", repairs)
		}
		return nil
	})
	bootIDs := []string{}
	for _, r := range repairs {
		switch r.Node {
		case untouched.Name:
			t.Errorf("NoAction's %s was repaired: %+v", untouched.Name, r)
		case rebooted.Name:
			if r.Action != repairReboot || r.BootID == "" || r.Error != "" {
				t.Errorf("repair of %s: %+v, want a Reboot", rebooted.Name, r)
			}
			bootIDs = append(bootIDs, r.BootID)
		case witness.Name:
			if r.Action != repairReplace {
				t.Errorf("repair of the witness %s: %+v, want Replace", witness.Name, r)
			}
		}
	}
	after, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), rebooted.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the rebooted node is gone: %v", err)
	}
	if got := after.Status.NodeInfo.BootID; got == rebooted.Status.NodeInfo.BootID || after.UID != rebooted.UID {
		t.Errorf("after the reboot: boot ID %q (was %q), uid %s (was %s), want a new boot ID on the same node", got, rebooted.Status.NodeInfo.BootID, after.UID, rebooted.UID)
	}
	if got := after.Status.NodeInfo.BootID; !slices.Contains(bootIDs, got) {
		// A reboot after the list was read: its boot ID is newer.
		if s := repairStatus(t, name); !slices.ContainsFunc(s.Repairs, func(r NodeRepair) bool { return r.BootID == got }) {
			t.Errorf("boot ID %q is none of the reboots' %v", got, bootIDs)
		}
	}
	if !slices.Contains(nodeNames(groupNodes(t, name)), untouched.Name) {
		t.Errorf("NoAction's %s left the group", untouched.Name)
	}
}

func TestRepairLeavesGroupsWithoutIt(t *testing.T) {
	requireTestbed(t)
	const off, on = "repair-off", "repair-on"
	offNode := repairGroup(t, off, 1, nil)[0].Name
	onNode := repairGroup(t, on, 1, repairOn())[0].Name
	setAccelerated(t, offNode, corev1.ConditionFalse, "NvidiaXID79Error")
	setAccelerated(t, onNode, corev1.ConditionFalse, "NvidiaXID79Error")

	waitRepairs(t, on, 1)
	if repairs := repairStatus(t, off).Repairs; len(repairs) != 0 {
		t.Errorf("a group without node repair had repairs: %+v", repairs)
	}
	if names := nodeNames(groupNodes(t, off)); !slices.Equal(names, []string{offNode}) {
		t.Errorf("nodes of the group without repair: %v, want %s", names, offNode)
	}
}

func TestRepairRepairsNoMoreThanTheParallelLimitAtOnce(t *testing.T) {
	requireTestbed(t)
	const name = "repair-parallel"
	cfg := repairOn()
	cfg.MaxParallelNodesRepairedCount = aws.Int32(1)
	nodes := repairGroup(t, name, 3, cfg)
	for _, n := range nodes {
		setAccelerated(t, n.Name, corev1.ConditionFalse, "NvidiaXID79Error")
	}
	repairs := waitRepairs(t, name, 3)
	for i := 1; i < len(repairs); i++ {
		if repairs[i].Started.Before(repairs[i-1].Finished) {
			t.Errorf("repair %d (%s) started at %s, before repair %d (%s) finished at %s: more than one at once",
				i, repairs[i].Node, repairs[i].Started, i-1, repairs[i-1].Node, repairs[i-1].Finished)
		}
	}
	if got, want := nodeNames(nodes), func() []string {
		var names []string
		for _, r := range repairs {
			names = append(names, r.Node)
		}
		slices.Sort(names)
		return names
	}(); !slices.Equal(got, want) {
		t.Errorf("repaired %v, want each of %v once", want, got)
	}
	waitGroupNodes(t, name, 3)
}

func TestRepairPausesWhenMoreThanTwentyPercentOfMoreThanFiveNodesAreUnhealthy(t *testing.T) {
	requireTestbed(t)
	const name = "repair-paused"
	nodes := repairGroup(t, name, 6, repairOn())
	first := setAccelerated(t, nodes[0].Name, corev1.ConditionFalse, "NvidiaXID79Error")
	setAccelerated(t, nodes[1].Name, corev1.ConditionFalse, "NvidiaXID79Error")

	// Two of six (33%): paused, and it stays so past the wait.
	eventually(t, "repair to pause", func() error {
		if s := repairStatus(t, name); s.Paused == "" {
			return fmt.Errorf("not paused: %+v", s)
		}
		return nil
	})
	time.Sleep(time.Until(first.Add(10 * testRepairMinute)))
	s := repairStatus(t, name)
	if len(s.Repairs) != 0 || !strings.Contains(s.Paused, "2 of 6 nodes unhealthy") {
		t.Fatalf("past the wait with 2 of 6 unhealthy: %+v, want paused and no repair", s)
	}
	// The emulator's log: a file unless GPU_TESTBED_VERBOSE sends it to
	// standard error.
	if logPath := filepath.Join(filepath.Dir(emu.dir), "logs", "aws-emulator.log"); os.Getenv("GPU_TESTBED_VERBOSE") != "1" {
		eventually(t, "the pause in the emulator's log", func() error {
			b, err := os.ReadFile(logPath)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), "node group "+name+": node auto repair paused: 2 of 6 nodes unhealthy") {
				return fmt.Errorf("not in %s", logPath)
			}
			return nil
		})
	}

	// One recovers: 1 of 6 is not more than 20%, the other is repaired.
	recovered := setAccelerated(t, nodes[1].Name, corev1.ConditionTrue, "NvidiaGPUIsReady")
	repairs := waitRepairs(t, name, 1)
	if r := repairs[0]; r.Node != nodes[0].Name || r.Started.Before(recovered) {
		t.Errorf("repair %+v: want %s's, after the pause ended at %s", r, nodes[0].Name, recovered)
	}
	if s := repairStatus(t, name); s.Paused != "" {
		t.Errorf("still paused with one unhealthy node: %q", s.Paused)
	}
}

func TestRepairPolicyFollowsTheUserGuide(t *testing.T) {
	for reason, want := range map[string]string{
		"NvidiaXID13Error": repairReboot, "NvidiaXID31Error": repairReboot, "NvidiaXID64Error": repairReboot,
		"NvidiaXID79Error": repairReplace, "NvidiaXID140Error": repairReplace, "NvidiaDoubleBitError": repairReplace,
		"DCGMError": repairNoAction, "DCGMHealthCode12": repairNoAction, "NvidiaDeviceCountMismatch": repairNoAction,
		"NvidiaRowRemapFailure": repairReplace, // not EKS's: replaced, as Auto Mode does
	} {
		if got := defaultAction(conditionAcceleratedHardware, reason); got != want {
			t.Errorf("default action for %s: %s, want %s", reason, got, want)
		}
	}
	if got := defaultAction("KernelReady", "ForkFailedOutOfPIDs"); got != repairReplace {
		t.Errorf("KernelReady: %s, want Replace", got)
	}
	cfg := &nodeRepairConfig{}
	for _, c := range []struct {
		unhealthy, total int
		paused           bool
	}{{1, 1, false}, {5, 5, false}, {2, 6, true}, {1, 6, false}, {2, 10, false}, {3, 10, true}} {
		if got := repairPause(cfg, c.unhealthy, c.total) != ""; got != c.paused {
			t.Errorf("default pause with %d of %d unhealthy: %v, want %v", c.unhealthy, c.total, got, c.paused)
		}
	}
	count := &nodeRepairConfig{MaxUnhealthyNodeThresholdCount: aws.Int32(2)}
	if repairPause(count, 2, 3) != "" || repairPause(count, 3, 100) == "" {
		t.Error("maxUnhealthyNodeThresholdCount 2: want repairs with 2 unhealthy, a pause with 3")
	}
	pct := &nodeRepairConfig{MaxUnhealthyNodeThresholdPercentage: aws.Int32(50)}
	if repairPause(pct, 1, 2) != "" || repairPause(pct, 2, 3) == "" {
		t.Error("maxUnhealthyNodeThresholdPercentage 50: want repairs at 1 of 2, a pause at 2 of 3")
	}
	if got := repairParallel(&nodeRepairConfig{MaxParallelNodesRepairedPercentage: aws.Int32(50)}, 5); got != 2 {
		t.Errorf("50%% of 5 unhealthy in parallel: %d, want 2", got)
	}
	if got := repairParallel(&nodeRepairConfig{MaxParallelNodesRepairedPercentage: aws.Int32(10)}, 3); got != 1 {
		t.Errorf("10%% of 3 unhealthy in parallel: %d, want at least 1", got)
	}
	w := watchedConditions[0]
	o := ruleFor(&nodeRepairConfig{NodeRepairConfigOverrides: []nodeRepairOverride{{NodeMonitoringCondition: conditionAcceleratedHardware,
		NodeUnhealthyReason: "NvidiaXID31Error", MinRepairWaitTimeMins: aws.Int32(15), RepairAction: repairNoAction}}}, w, "NvidiaXID31Error", time.Minute)
	if o.action != repairNoAction || o.wait != 15*time.Minute {
		t.Errorf("override: %+v", o)
	}
	if d := ruleFor(&nodeRepairConfig{}, w, "NvidiaXID31Error", time.Minute); d.action != repairReboot || d.wait != 10*time.Minute {
		t.Errorf("default for XID 31: %+v, want Reboot after 10 minutes", d)
	}
}

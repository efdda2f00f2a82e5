package awsemu

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// What EKS node auto repair of a managed node group watches and does, as
// AWS documents it. Sources:
//   - EKS User Guide, "Automatically repair nodes in EKS clusters"
//     (node-repair.html): the watched conditions and their "Repair after"
//     (AcceleratedHardwareReady 10m; ContainerRuntimeReady, KernelReady,
//     NetworkingReady, StorageReady and Ready 30m; DiskPressure and
//     MemoryPressure none), the actions (Replace for every condition but
//     AcceleratedHardwareReady, "Replace or Reboot" for it), the default
//     pause of a managed node group ("The node group has more than five
//     nodes and more than 20% of the nodes in the node group are
//     unhealthy"; "In-progress node repair actions continue"), and the
//     overrides.
//   - EKS User Guide, "Detect node health issues with the EKS node
//     monitoring agent" (node-health-nma.html): the repair action of each
//     AcceleratedHardwareReady reason.
//   - EKS API reference, API_NodeRepairConfig and
//     API_NodeRepairConfigOverrides: the thresholds ("above which node auto
//     repair actions will stop") and the parallelism ("expressed as a count
//     [percentage] of unhealthy nodes").
//   - Which status is unhealthy: Karpenter's AWS provider, which EKS Auto
//     Mode runs (aws/karpenter-provider-aws pkg/cloudprovider
//     RepairPolicies): Ready False or Unknown, the monitoring agent's
//     conditions False. An AcceleratedHardwareReady of Unknown (no driver,
//     in our agent) is never repaired.

// The repair actions (RepairAction).
const (
	repairReplace  = "Replace"
	repairReboot   = "Reboot"
	repairNoAction = "NoAction"
)

// conditionAcceleratedHardware is the monitoring agent's accelerated
// hardware condition.
const conditionAcceleratedHardware = "AcceleratedHardwareReady"

// watchedCondition is a node condition repair acts on: unhealthy in one of
// the statuses, repaired after waitMinutes.
type watchedCondition struct {
	conditionType string
	unhealthy     []corev1.ConditionStatus
	waitMinutes   int
}

var watchedConditions = []watchedCondition{
	{conditionAcceleratedHardware, []corev1.ConditionStatus{corev1.ConditionFalse}, 10},
	{"ContainerRuntimeReady", []corev1.ConditionStatus{corev1.ConditionFalse}, 30},
	{"KernelReady", []corev1.ConditionStatus{corev1.ConditionFalse}, 30},
	{"NetworkingReady", []corev1.ConditionStatus{corev1.ConditionFalse}, 30},
	{"StorageReady", []corev1.ConditionStatus{corev1.ConditionFalse}, 30},
	{string(corev1.NodeReady), []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown}, 30},
}

// acceleratedActions are the default actions node-health-nma.html lists
// for AcceleratedHardwareReady reasons ("None" is NoAction). The XID
// table: 13, 31, 48, 63, 64, 94, 95 Reboot; 74, 79, 119, 120, 121, 140
// Replace.
var acceleratedActions = map[string]string{
	"NvidiaXID13Error": repairReboot, "NvidiaXID31Error": repairReboot, "NvidiaXID48Error": repairReboot,
	"NvidiaXID63Error": repairReboot, "NvidiaXID64Error": repairReboot, "NvidiaXID94Error": repairReboot,
	"NvidiaXID95Error": repairReboot,
	"NvidiaXID74Error": repairReplace, "NvidiaXID79Error": repairReplace, "NvidiaXID119Error": repairReplace,
	"NvidiaXID120Error": repairReplace, "NvidiaXID121Error": repairReplace, "NvidiaXID140Error": repairReplace,
	"NvidiaDoubleBitError": repairReplace, "NvidiaNVLinkError": repairReplace,
	"NeuronDMAError": repairReplace, "NeuronHBMUncorrectableError": repairReplace,
	"NeuronNCUncorrectableError": repairReplace, "NeuronSRAMUncorrectableError": repairReplace,
	"DCGMDiagnosticFailure": repairNoAction, "DCGMError": repairNoAction,
	// An event in the User Guide (a condition in the agent's source):
	// repair action None.
	"NvidiaDeviceCountMismatch": repairNoAction,
}

// defaultAction is EKS's action for a condition and reason when no
// override matches. An AcceleratedHardwareReady reason the User Guide
// does not list (another XID, or one of our agent's own reasons) is
// replaced, as EKS Auto Mode and Karpenter replace for every
// AcceleratedHardwareReady repair: the emulator's choice, where AWS
// documents none.
func defaultAction(conditionType, reason string) string {
	if conditionType != conditionAcceleratedHardware {
		return repairReplace
	}
	if a, ok := acceleratedActions[reason]; ok {
		return a
	}
	if strings.HasPrefix(reason, "DCGMHealthCode") {
		return repairNoAction
	}
	return repairReplace
}

// repairRule is what repair does about one unhealthy condition: the
// action after the wait.
type repairRule struct {
	action string
	wait   time.Duration
}

// ruleFor is the rule for a condition of the watched type in its
// unhealthy status with reason: the first override naming the condition
// and the reason, else the default. minute is how long one minute of
// wait lasts.
func ruleFor(c *nodeRepairConfig, w watchedCondition, reason string, minute time.Duration) repairRule {
	for _, o := range c.NodeRepairConfigOverrides {
		if o.NodeMonitoringCondition == w.conditionType && o.NodeUnhealthyReason == reason && o.MinRepairWaitTimeMins != nil {
			return repairRule{action: o.RepairAction, wait: time.Duration(*o.MinRepairWaitTimeMins) * minute}
		}
	}
	return repairRule{action: defaultAction(w.conditionType, reason), wait: time.Duration(w.waitMinutes) * minute}
}

// unhealthyIn reports whether status is one the condition is unhealthy in.
func (w watchedCondition) unhealthyIn(status corev1.ConditionStatus) bool {
	return slices.Contains(w.unhealthy, status)
}

// repairEnabled reports whether the group's nodes are repaired.
func repairEnabled(c *nodeRepairConfig) bool {
	return c != nil && c.Enabled != nil && *c.Enabled
}

// repairPause says why repair starts no repair in a group with total nodes
// of which unhealthy are: "" when it may. Without a threshold, EKS's
// default: more than five nodes and more than 20% unhealthy.
func repairPause(c *nodeRepairConfig, unhealthy, total int) string {
	switch {
	case c.MaxUnhealthyNodeThresholdCount != nil:
		if limit := int(*c.MaxUnhealthyNodeThresholdCount); unhealthy > limit {
			return fmt.Sprintf("%d of %d nodes unhealthy, more than maxUnhealthyNodeThresholdCount %d", unhealthy, total, limit)
		}
	case c.MaxUnhealthyNodeThresholdPercentage != nil:
		if pct := int(*c.MaxUnhealthyNodeThresholdPercentage); unhealthy*100 > pct*total {
			return fmt.Sprintf("%d of %d nodes unhealthy, more than maxUnhealthyNodeThresholdPercentage %d%%", unhealthy, total, pct)
		}
	default:
		if total > 5 && unhealthy*100 > 20*total {
			return fmt.Sprintf("%d of %d nodes unhealthy: more than five nodes and more than 20%% unhealthy (EKS's default)", unhealthy, total)
		}
	}
	return ""
}

// repairParallel is how many repairs of the group may be in progress at
// once, given unhealthy nodes; 0 is no limit (AWS documents no default).
// A percentage of the unhealthy nodes rounds down, to at least one (the
// rounding is the emulator's).
func repairParallel(c *nodeRepairConfig, unhealthy int) int {
	switch {
	case c.MaxParallelNodesRepairedCount != nil:
		return int(*c.MaxParallelNodesRepairedCount)
	case c.MaxParallelNodesRepairedPercentage != nil:
		return max(1, unhealthy*int(*c.MaxParallelNodesRepairedPercentage)/100)
	}
	return 0
}

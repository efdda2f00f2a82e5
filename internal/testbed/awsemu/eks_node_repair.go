package awsemu

import (
	"slices"
	"strings"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// The update strategy and node repair rules of the EKS API reference
// (https://docs.aws.amazon.com/eks/latest/APIReference/:
// API_NodegroupUpdateConfig: updateStrategy DEFAULT | MINIMAL;
// API_NodeRepairConfig: the counts at least 1, the percentages 1 to 100, a
// count and the percentage of the same bound never both;
// API_NodeRepairConfigOverrides: "If you use this, you must specify all
// the values", minRepairWaitTimeMins at least 1, repairAction Replace |
// Reboot | NoAction).
var (
	updateStrategies = enumValues(ekstypes.NodegroupUpdateStrategies("").Values())
	repairActions    = enumValues(ekstypes.RepairAction("").Values())
)

func validateUpdateStrategy(s string) *apiError {
	if s != "" && !slices.Contains(updateStrategies, s) {
		return invalidParameter("Invalid updateStrategy %q. Valid values are: %s.", s, strings.Join(updateStrategies, ", "))
	}
	return nil
}

func validateNodeRepair(c *nodeRepairConfig) *apiError {
	if c == nil {
		return nil
	}
	pairs := []struct {
		count, percentage         *int32
		countName, percentageName string
	}{
		{c.MaxParallelNodesRepairedCount, c.MaxParallelNodesRepairedPercentage, "maxParallelNodesRepairedCount", "maxParallelNodesRepairedPercentage"},
		{c.MaxUnhealthyNodeThresholdCount, c.MaxUnhealthyNodeThresholdPercentage, "maxUnhealthyNodeThresholdCount", "maxUnhealthyNodeThresholdPercentage"},
	}
	for _, p := range pairs {
		if p.count != nil && p.percentage != nil {
			return invalidParameter("nodeRepairConfig: only one of %s and %s can be specified.", p.countName, p.percentageName)
		}
		if p.count != nil && *p.count < 1 {
			return invalidParameter("nodeRepairConfig.%s must be at least 1, not %d.", p.countName, *p.count)
		}
		if p.percentage != nil && (*p.percentage < 1 || *p.percentage > 100) {
			return invalidParameter("nodeRepairConfig.%s must be between 1 and 100, not %d.", p.percentageName, *p.percentage)
		}
	}
	for i, o := range c.NodeRepairConfigOverrides {
		if o.NodeMonitoringCondition == "" || o.NodeUnhealthyReason == "" || o.MinRepairWaitTimeMins == nil || o.RepairAction == "" {
			return invalidParameter("nodeRepairConfigOverrides[%d]: nodeMonitoringCondition, nodeUnhealthyReason, minRepairWaitTimeMins and repairAction are all required.", i)
		}
		if *o.MinRepairWaitTimeMins < 1 {
			return invalidParameter("nodeRepairConfigOverrides[%d].minRepairWaitTimeMins must be at least 1, not %d.", i, *o.MinRepairWaitTimeMins)
		}
		if !slices.Contains(repairActions, o.RepairAction) {
			return invalidParameter("nodeRepairConfigOverrides[%d]: invalid repairAction %q. Valid values are: %s.", i, o.RepairAction, strings.Join(repairActions, ", "))
		}
	}
	return nil
}

// mergeUpdateConfig is the group's update config after an
// UpdateNodegroupConfig that sends u: a bound sent replaces both bounds,
// a strategy sent replaces the strategy, what is not sent is kept.
func mergeUpdateConfig(current *nodegroupUpdateConfig, u *nodegroupUpdateConfig) *nodegroupUpdateConfig {
	merged := nodegroupUpdateConfig{}
	if current != nil {
		merged = *current
	}
	if u.MaxUnavailable != nil || u.MaxUnavailablePercentage != nil {
		merged.MaxUnavailable, merged.MaxUnavailablePercentage = u.MaxUnavailable, u.MaxUnavailablePercentage
	}
	if u.UpdateStrategy != "" {
		merged.UpdateStrategy = u.UpdateStrategy
	}
	return &merged
}

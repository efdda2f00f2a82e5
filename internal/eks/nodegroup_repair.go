package eks

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// NodeRepairConfig is EKS's node auto repair configuration of a node group
// (API_NodeRepairConfig). Zero counts and percentages are unset; of each
// count / percentage pair EKS takes one at most.
type NodeRepairConfig struct {
	Enabled                             bool
	MaxParallelNodesRepairedCount       int32
	MaxParallelNodesRepairedPercentage  int32
	MaxUnhealthyNodeThresholdCount      int32
	MaxUnhealthyNodeThresholdPercentage int32
	Overrides                           []NodeRepairOverride
}

// NodeRepairOverride is one NodeRepairConfigOverrides: for nodes the node
// monitoring agent reports with this condition and reason, wait this many
// minutes, then take this action ("Replace", "Reboot", "NoAction"). EKS
// needs all four.
type NodeRepairOverride struct {
	NodeMonitoringCondition string
	NodeUnhealthyReason     string
	MinRepairWaitTimeMins   int32
	RepairAction            string
}

// RepairActions are the repair actions EKS takes, as the SDK lists them.
var RepairActions = enumStrings(ekstypes.RepairAction("").Values())

// UpdateStrategies are EKS's node group update strategies.
var UpdateStrategies = enumStrings(ekstypes.NodegroupUpdateStrategies("").Values())

func enumStrings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

func nodeRepairToEKS(c *NodeRepairConfig) *ekstypes.NodeRepairConfig {
	if c == nil {
		return nil
	}
	out := &ekstypes.NodeRepairConfig{
		Enabled:                             aws.Bool(c.Enabled),
		MaxParallelNodesRepairedCount:       optionalInt32(c.MaxParallelNodesRepairedCount),
		MaxParallelNodesRepairedPercentage:  optionalInt32(c.MaxParallelNodesRepairedPercentage),
		MaxUnhealthyNodeThresholdCount:      optionalInt32(c.MaxUnhealthyNodeThresholdCount),
		MaxUnhealthyNodeThresholdPercentage: optionalInt32(c.MaxUnhealthyNodeThresholdPercentage),
	}
	for _, o := range c.Overrides {
		out.NodeRepairConfigOverrides = append(out.NodeRepairConfigOverrides, ekstypes.NodeRepairConfigOverrides{
			NodeMonitoringCondition: aws.String(o.NodeMonitoringCondition),
			NodeUnhealthyReason:     aws.String(o.NodeUnhealthyReason),
			MinRepairWaitTimeMins:   aws.Int32(o.MinRepairWaitTimeMins),
			RepairAction:            ekstypes.RepairAction(o.RepairAction),
		})
	}
	return out
}

// nodeRepairFromEKS is what DescribeNodegroup reports; nil when it reports none.
func nodeRepairFromEKS(c *ekstypes.NodeRepairConfig) *NodeRepairConfig {
	if c == nil {
		return nil
	}
	out := &NodeRepairConfig{
		Enabled:                             aws.ToBool(c.Enabled),
		MaxParallelNodesRepairedCount:       aws.ToInt32(c.MaxParallelNodesRepairedCount),
		MaxParallelNodesRepairedPercentage:  aws.ToInt32(c.MaxParallelNodesRepairedPercentage),
		MaxUnhealthyNodeThresholdCount:      aws.ToInt32(c.MaxUnhealthyNodeThresholdCount),
		MaxUnhealthyNodeThresholdPercentage: aws.ToInt32(c.MaxUnhealthyNodeThresholdPercentage),
	}
	for _, o := range c.NodeRepairConfigOverrides {
		out.Overrides = append(out.Overrides, NodeRepairOverride{
			NodeMonitoringCondition: aws.ToString(o.NodeMonitoringCondition),
			NodeUnhealthyReason:     aws.ToString(o.NodeUnhealthyReason),
			MinRepairWaitTimeMins:   aws.ToInt32(o.MinRepairWaitTimeMins),
			RepairAction:            string(o.RepairAction),
		})
	}
	return out
}

// Equal says whether two repair configurations are the same; nil is EKS's
// default, disabled with nothing else set.
func (c *NodeRepairConfig) Equal(o *NodeRepairConfig) bool {
	a, b := c.orDefault(), o.orDefault()
	if len(a.Overrides) != len(b.Overrides) {
		return false
	}
	for i := range a.Overrides {
		if a.Overrides[i] != b.Overrides[i] {
			return false
		}
	}
	a.Overrides, b.Overrides = nil, nil
	return a.Enabled == b.Enabled && a.MaxParallelNodesRepairedCount == b.MaxParallelNodesRepairedCount &&
		a.MaxParallelNodesRepairedPercentage == b.MaxParallelNodesRepairedPercentage &&
		a.MaxUnhealthyNodeThresholdCount == b.MaxUnhealthyNodeThresholdCount &&
		a.MaxUnhealthyNodeThresholdPercentage == b.MaxUnhealthyNodeThresholdPercentage
}

func (c *NodeRepairConfig) orDefault() NodeRepairConfig {
	if c == nil {
		return NodeRepairConfig{}
	}
	return *c
}

func optionalInt32(v int32) *int32 {
	if v == 0 {
		return nil
	}
	return aws.Int32(v)
}

package eks

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/stretchr/testify/require"
)

func TestUpdateConfigInputCarriesStrategyAndRepair(t *testing.T) {
	one := &UpdateConfig{MaxUnavailable: 1}
	repair := &NodeRepairConfig{Enabled: true, MaxParallelNodesRepairedCount: 2,
		Overrides: []NodeRepairOverride{{NodeMonitoringCondition: "AcceleratedHardwareReady", NodeUnhealthyReason: "NvidiaXID31Error", MinRepairWaitTimeMins: 10, RepairAction: "Reboot"}}}
	tests := []struct {
		description    string
		prior, planned NodeGroupSpec
		want           *awseks.UpdateNodegroupConfigInput
	}{
		{"A new update strategy is sent with the bound.",
			NodeGroupSpec{UpdateConfig: one}, NodeGroupSpec{UpdateConfig: &UpdateConfig{MaxUnavailable: 1, UpdateStrategy: "MINIMAL"}},
			&awseks.UpdateNodegroupConfigInput{UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailable: aws.Int32(1), UpdateStrategy: "MINIMAL"}}},
		{"Repair turned on is sent whole.",
			NodeGroupSpec{}, NodeGroupSpec{NodeRepair: repair},
			&awseks.UpdateNodegroupConfigInput{NodeRepairConfig: nodeRepairToEKS(repair)}},
		{"Repair off against EKS's unset default needs no update.",
			NodeGroupSpec{}, NodeGroupSpec{NodeRepair: &NodeRepairConfig{}}, nil},
		{"The same repair config needs no update.",
			NodeGroupSpec{NodeRepair: repair}, NodeGroupSpec{NodeRepair: repair}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			got := updateConfigInput(tc.prior, tc.planned)
			if tc.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.want.UpdateConfig, got.UpdateConfig)
			require.Equal(t, tc.want.NodeRepairConfig, got.NodeRepairConfig)
		})
	}
}

package eks

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/stretchr/testify/require"
)

func TestDiffLabels(t *testing.T) {
	tests := []struct {
		description    string
		prior, planned map[string]string
		want           *ekstypes.UpdateLabelsPayload
	}{
		{"Equal labels need no update.", map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil},
		{"No labels on either side need no update.", nil, map[string]string{}, nil},
		{
			"New and changed keys are added or updated, removed keys are removed, unchanged keys are not sent.",
			map[string]string{"keep": "1", "change": "old", "drop": "x", "drop2": "y"},
			map[string]string{"keep": "1", "change": "new", "add": "2"},
			&ekstypes.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"change": "new", "add": "2"}, RemoveLabels: []string{"drop", "drop2"}},
		},
		{"Removing every label sends only removals.", map[string]string{"a": "1"}, nil, &ekstypes.UpdateLabelsPayload{RemoveLabels: []string{"a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, diffLabels(tc.prior, tc.planned))
		})
	}
}

func eksTaint(key, value string, effect ekstypes.TaintEffect) ekstypes.Taint {
	t := ekstypes.Taint{Key: aws.String(key), Effect: effect}
	if value != "" {
		t.Value = aws.String(value)
	}
	return t
}

func TestDiffTaints(t *testing.T) {
	gpu := Taint{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}
	tests := []struct {
		description    string
		prior, planned []Taint
		want           *ekstypes.UpdateTaintsPayload
	}{
		{"Equal taints, in another order, need no update.",
			[]Taint{gpu, {Key: "a", Effect: "NO_EXECUTE"}}, []Taint{{Key: "a", Effect: "NO_EXECUTE"}, gpu}, nil},
		{"A new taint is added.", nil, []Taint{gpu},
			&ekstypes.UpdateTaintsPayload{AddOrUpdateTaints: []ekstypes.Taint{eksTaint("nvidia.com/gpu", "true", "NO_SCHEDULE")}}},
		{"A changed value is an update of the same key and effect, not a removal.",
			[]Taint{gpu}, []Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NO_SCHEDULE"}},
			&ekstypes.UpdateTaintsPayload{AddOrUpdateTaints: []ekstypes.Taint{eksTaint("nvidia.com/gpu", "present", "NO_SCHEDULE")}}},
		{"A changed effect removes the old taint and adds the new one (key and effect identify a taint).",
			[]Taint{gpu}, []Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_EXECUTE"}},
			&ekstypes.UpdateTaintsPayload{
				AddOrUpdateTaints: []ekstypes.Taint{eksTaint("nvidia.com/gpu", "true", "NO_EXECUTE")},
				RemoveTaints:      []ekstypes.Taint{eksTaint("nvidia.com/gpu", "true", "NO_SCHEDULE")},
			}},
		{"A dropped taint is removed.", []Taint{gpu, {Key: "spot", Effect: "PREFER_NO_SCHEDULE"}}, []Taint{gpu},
			&ekstypes.UpdateTaintsPayload{RemoveTaints: []ekstypes.Taint{eksTaint("spot", "", "PREFER_NO_SCHEDULE")}}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, diffTaints(tc.prior, tc.planned))
		})
	}
}

func TestUpdateInputsCallNothingWhenPriorAndPlannedAgree(t *testing.T) {
	spec := NodeGroupSpec{
		ClusterName: "prod", Name: "gpu", Version: "1.31", ReleaseVersion: "1.31.0-20250101",
		Scaling: Scaling{Min: 0, Max: 4, Desired: 2}, Labels: map[string]string{"a": "1"},
		Taints: []Taint{{Key: "k", Effect: "NO_SCHEDULE"}}, UpdateConfig: &UpdateConfig{MaxUnavailable: 1},
		LaunchTemplate: &LaunchTemplate{ID: "lt-1", Version: "3"}, Tags: map[string]string{"t": "1"},
	}
	require.Nil(t, updateVersionInput(spec, spec))
	require.Nil(t, updateConfigInput(spec, spec))

	changedTags := spec
	changedTags.Tags = map[string]string{"t": "2"}
	require.Nil(t, updateVersionInput(spec, changedTags), "tags go through TagResource, not a node group update")
	require.Nil(t, updateConfigInput(spec, changedTags))
}

func TestUpdateInputsSendOnlyWhatChanged(t *testing.T) {
	prior := NodeGroupSpec{ClusterName: "prod", Name: "gpu", Version: "1.30", Scaling: Scaling{Min: 0, Max: 4, Desired: 2}}

	planned := prior
	planned.Version, planned.ForceUpdateVersion = "1.31", true
	v := updateVersionInput(prior, planned)
	require.NotNil(t, v)
	require.Equal(t, "1.31", aws.ToString(v.Version))
	require.True(t, v.Force)
	require.Nil(t, v.ReleaseVersion, "an unchanged release version is left to EKS")
	require.Nil(t, v.LaunchTemplate)
	require.Nil(t, updateConfigInput(prior, planned), "a version change alone needs no config update")

	planned = prior
	planned.Scaling.Desired = 3
	c := updateConfigInput(prior, planned)
	require.NotNil(t, c)
	require.Equal(t, &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), MaxSize: aws.Int32(4), DesiredSize: aws.Int32(3)}, c.ScalingConfig)
	require.Nil(t, c.Labels)
	require.Nil(t, c.Taints)
	require.Nil(t, c.UpdateConfig)
	require.Nil(t, updateVersionInput(prior, planned))

	planned = prior
	planned.LaunchTemplate = &LaunchTemplate{Name: "gpu", Version: "4"}
	prior.LaunchTemplate = &LaunchTemplate{Name: "gpu", Version: "3"}
	v = updateVersionInput(prior, planned)
	require.NotNil(t, v)
	require.Equal(t, "4", aws.ToString(v.LaunchTemplate.Version))
	require.Nil(t, v.Version)
}

// A node group EKS describes names its launch template by ID and name; a
// request may carry only one of them.
func TestLaunchTemplateGoesByIDOrNameNeverBoth(t *testing.T) {
	both := launchTemplateToEKS(&LaunchTemplate{ID: "lt-0abc", Name: "gpu", Version: "2"})
	require.Equal(t, "lt-0abc", aws.ToString(both.Id))
	require.Nil(t, both.Name)
	require.Equal(t, "2", aws.ToString(both.Version))
	byName := launchTemplateToEKS(&LaunchTemplate{Name: "gpu"})
	require.Nil(t, byName.Id)
	require.Equal(t, "gpu", aws.ToString(byName.Name))
	require.Nil(t, byName.Version)
	require.Nil(t, launchTemplateToEKS(nil))
}

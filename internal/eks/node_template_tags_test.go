package eks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeTemplateTags(t *testing.T) {
	tests := []struct {
		description string
		labels      map[string]string
		taints      []Taint
		gpus        int
		want        map[string]string
	}{
		{
			description: "Labels, taints in Kubernetes' effect names, and the GPU count become cluster-autoscaler node-template tags.",
			labels:      map[string]string{"gpu": "h100", "team.example.com/owner": "ml"},
			taints: []Taint{
				{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"},
				{Key: "dedicated", Value: "ml", Effect: "NO_EXECUTE"},
				{Key: "spot", Effect: "PREFER_NO_SCHEDULE"},
			},
			gpus: 8,
			want: map[string]string{
				"k8s.io/cluster-autoscaler/node-template/label/gpu":                    "h100",
				"k8s.io/cluster-autoscaler/node-template/label/team.example.com/owner": "ml",
				"k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu":         "true:NoSchedule",
				"k8s.io/cluster-autoscaler/node-template/taint/dedicated":              "ml:NoExecute",
				"k8s.io/cluster-autoscaler/node-template/taint/spot":                   ":PreferNoSchedule",
				"k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu":     "8",
			},
		},
		{
			description: "A group without GPUs, labels or taints has no tags.",
			want:        map[string]string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, NodeTemplateTags(tc.labels, tc.taints, tc.gpus))
		})
	}
}

func TestCommonNodeTemplateTagsKeepOnlyWhatEveryGroupCarries(t *testing.T) {
	const gpu = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
	const label = "k8s.io/cluster-autoscaler/node-template/label/team"
	got := commonNodeTemplateTags([]map[string]string{
		{gpu: "8", label: "ml", "eks:nodegroup-name": "gpu"},
		{gpu: "8", label: "research"},
	})
	require.Equal(t, map[string]string{gpu: "8"}, got, "a tag that differs between groups is planned again; other tags are not node-template tags")
	require.Equal(t, map[string]string{gpu: "8", label: "ml"}, commonNodeTemplateTags([]map[string]string{{gpu: "8", label: "ml", "owner": "x"}}))
	require.Empty(t, commonNodeTemplateTags(nil))
}

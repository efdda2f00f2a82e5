package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDaemonSetSkips(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-17.us-west-2.compute.internal", Labels: map[string]string{
			"eks.amazonaws.com/nodegroup":      "gpu",
			"node.kubernetes.io/instance-type": "p5.48xlarge",
			"gpus":                             "8",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule},
			{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute},
		}},
	}
	tolerateDedicated := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "training", Effect: corev1.TaintEffectNoSchedule}}
	affinity := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, tt := range []struct {
		description string
		spec        corev1.PodSpec
		want        string
	}{
		{
			description: "a DaemonSet that tolerates the node's NoSchedule taint places a pod there; PreferNoSchedule and node lifecycle taints do not count",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated},
			want:        "",
		},
		{
			description: "an untolerated NoSchedule taint is named with its value and effect",
			spec:        corev1.PodSpec{},
			want:        "it does not tolerate the node's taint dedicated=training:NoSchedule",
		},
		{
			description: "a toleration for another value does not tolerate the taint",
			spec:        corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "inference"}}},
			want:        "it does not tolerate the node's taint dedicated=training:NoSchedule",
		},
		{
			description: "a nodeSelector label the node lacks is named",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated, NodeSelector: map[string]string{"nvidia.com/gpu.present": "true"}},
			want:        "its nodeSelector wants label nvidia.com/gpu.present=true, which the node lacks",
		},
		{
			description: "a nodeSelector label with another value is named with the node's value",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated, NodeSelector: map[string]string{"eks.amazonaws.com/nodegroup": "cpu"}},
			want:        "its nodeSelector wants label eks.amazonaws.com/nodegroup=cpu, the node has eks.amazonaws.com/nodegroup=gpu",
		},
		{
			description: "required node affinity terms are ORed: one that matches is enough",
			spec: corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(
				expr("nvidia.com/gpu.present", corev1.NodeSelectorOpIn, "true"),
				expr("node.kubernetes.io/instance-type", corev1.NodeSelectorOpIn, "p4d.24xlarge", "p5.48xlarge"),
			)},
			want: "",
		},
		{
			description: "required node affinity that no term of matches excludes the node",
			spec: corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(
				expr("nvidia.com/gpu.present", corev1.NodeSelectorOpIn, "true"),
				expr("feature.node.kubernetes.io/pci-10de.present", corev1.NodeSelectorOpExists),
			)},
			want: "its required node affinity matches none of the node's labels",
		},
		{
			description: "Gt compares a label as an integer",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(expr("gpus", corev1.NodeSelectorOpGt, "4"))},
			want:        "",
		},
		{
			description: "DoesNotExist excludes a node with the label",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(expr("gpus", corev1.NodeSelectorOpDoesNotExist))},
			want:        "its required node affinity matches none of the node's labels",
		},
		{
			description: "matchFields on metadata.name compares the node's name, longer than a label value may be",
			spec: corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"ip-10-0-1-17.us-west-2.compute.internal"},
			}}})},
			want: "",
		},
		{
			description: "an empty term matches nothing",
			spec:        corev1.PodSpec{Tolerations: tolerateDedicated, Affinity: affinity(corev1.NodeSelectorTerm{})},
			want:        "its required node affinity matches none of the node's labels",
		},
	} {
		t.Run(tt.description, func(t *testing.T) {
			ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: tt.spec}}}
			require.Equal(t, tt.want, daemonSetSkips(ds, node))
		})
	}
}

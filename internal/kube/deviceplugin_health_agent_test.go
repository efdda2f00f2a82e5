package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

func testHealthAgentSpec() DevicePluginSpec {
	spec := testDevicePluginSpec()
	spec.RuntimeClass = &RuntimeClassSpec{Name: "nvidia"}
	settings := gpuhealth.DefaultSettings()
	settings.Taint, settings.Damping, settings.Listen = true, 30*time.Second, ":9500"
	spec.HealthAgent = &HealthAgentSpec{Image: "registry.example/gpu-bootstrap:dev", Settings: settings}
	spec.Owner = "tf-0123"
	return spec
}

func healthAgentDaemonSetOf(t *testing.T, objs DevicePluginObjects) *appsv1ac.DaemonSetApplyConfiguration {
	t.Helper()
	last := objs.DaemonSets[len(objs.DaemonSets)-1]
	require.Equal(t, "plugin-health-agent", *last.Name)
	return last
}

func TestBuildHealthAgentObjects(t *testing.T) {
	t.Run("No health_agent, no agent objects.", func(t *testing.T) {
		objs, err := BuildDevicePluginObjects(testDevicePluginSpec())
		require.NoError(t, err)
		require.Nil(t, objs.HealthAgent)
		require.Equal(t, []string{"plugin"}, testDevicePluginSpec().DaemonSetNames())
	})
	t.Run("The DaemonSet runs gpu-bootstrap with exactly the settings' arguments, on the node it names.", func(t *testing.T) {
		spec := testHealthAgentSpec()
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		require.Equal(t, []string{"plugin", "plugin-health-agent"}, spec.DaemonSetNames())
		ds := healthAgentDaemonSetOf(t, objs)
		c := container(ds)
		require.Equal(t, []string{"gpu-bootstrap"}, c.Command)
		require.Equal(t, spec.HealthAgent.Settings.Args(), c.Args)
		parsed, err := gpuhealth.ParseArgs(c.Args)
		require.NoError(t, err, "the testbed and the agent read these arguments back")
		require.Equal(t, spec.HealthAgent.Settings, parsed)
		require.Equal(t, "registry.example/gpu-bootstrap:dev", *c.Image)
		require.Contains(t, c.Env, *nodeNameEnv())
		require.Contains(t, c.Env, *envVar("NVIDIA_VISIBLE_DEVICES", "all"), "the NVIDIA runtime injects NVML and every GPU")
		require.Equal(t, gpuhealth.ComponentHealthAgent, ds.Spec.Template.Labels[LabelName])
		require.Equal(t, gpuhealth.ComponentHealthAgent, ds.Spec.Selector.MatchLabels[LabelName])
		require.Equal(t, "tf-0123", ds.Annotations[AnnotationOwner])
		require.NotContains(t, ds.Spec.Template.Annotations, AnnotationOwner)
	})
	t.Run("It serves metrics and readiness on the Listen port, behind a Service.", func(t *testing.T) {
		spec := testHealthAgentSpec()
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		c := container(healthAgentDaemonSetOf(t, objs))
		require.Len(t, c.Ports, 1)
		require.Equal(t, "metrics", *c.Ports[0].Name)
		require.EqualValues(t, 9500, *c.Ports[0].ContainerPort)
		require.Equal(t, "/healthz", *c.ReadinessProbe.HTTPGet.Path)
		require.Equal(t, "metrics", c.ReadinessProbe.HTTPGet.Port.StrVal)
		svc := objs.HealthAgent.Service
		require.Equal(t, "plugin-health-agent", *svc.Name)
		require.EqualValues(t, 9500, *svc.Spec.Ports[0].Port)
		require.Equal(t, "metrics", svc.Spec.Ports[0].TargetPort.StrVal)
		require.Equal(t, spec.selectorLabels(gpuhealth.ComponentHealthAgent), svc.Spec.Selector)
		require.Equal(t, "tf-0123", svc.Annotations[AnnotationOwner])
	})
	t.Run("It schedules as the plugin does, tolerates its own taint, and runs with its ServiceAccount's token.", func(t *testing.T) {
		spec := testHealthAgentSpec()
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		plugin, agent := objs.DaemonSets[0].Spec.Template.Spec, healthAgentDaemonSetOf(t, objs).Spec.Template.Spec
		require.Equal(t, plugin.NodeSelector, agent.NodeSelector)
		require.Equal(t, plugin.Affinity, agent.Affinity)
		require.Equal(t, plugin.PriorityClassName, agent.PriorityClassName)
		require.Equal(t, "nvidia", *agent.RuntimeClassName)
		require.Equal(t, append(plugin.Tolerations, *corev1ac.Toleration().WithKey(gpuhealth.TaintKey).
			WithOperator(corev1.TolerationOpExists).WithEffect(corev1.TaintEffectNoSchedule)), agent.Tolerations)
		require.Equal(t, "plugin-health-agent", *agent.ServiceAccountName)
		require.Nil(t, agent.AutomountServiceAccountToken, "the agent needs in-cluster credentials")
		require.False(t, *plugin.AutomountServiceAccountToken)
	})
	t.Run("Its ClusterRole allows exactly what the agent does, bound to its ServiceAccount only.", func(t *testing.T) {
		spec := testHealthAgentSpec()
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		a := objs.HealthAgent
		require.Equal(t, "plugin-health-agent", *a.ServiceAccount.Name)
		require.Equal(t, "nvidia", *a.ServiceAccount.Namespace)
		require.Equal(t, "nvidia:plugin-health-agent", *a.ClusterRole.Name)
		rule := func(resource string, verbs ...string) rbacv1ac.PolicyRuleApplyConfiguration {
			return *rbacv1ac.PolicyRule().WithAPIGroups("").WithResources(resource).WithVerbs(verbs...)
		}
		require.Equal(t, []rbacv1ac.PolicyRuleApplyConfiguration{
			rule("nodes", "get", "list", "watch", "patch"),
			rule("nodes/status", "patch"),
			rule("events", "create", "patch"),
		}, a.ClusterRole.Rules)
		b := a.ClusterRoleBinding
		require.Equal(t, "nvidia:plugin-health-agent", *b.Name)
		require.Equal(t, "ClusterRole", *b.RoleRef.Kind)
		require.Equal(t, *a.ClusterRole.Name, *b.RoleRef.Name)
		require.Len(t, b.Subjects, 1)
		require.Equal(t, "ServiceAccount", *b.Subjects[0].Kind)
		require.Equal(t, "nvidia", *b.Subjects[0].Namespace)
		require.Equal(t, "plugin-health-agent", *b.Subjects[0].Name)
		for _, annotations := range []map[string]string{a.ServiceAccount.Annotations, a.ClusterRole.Annotations, b.Annotations} {
			require.Equal(t, "tf-0123", annotations[AnnotationOwner])
		}
	})
	t.Run("The settings read back from the DaemonSet are the ones deployed.", func(t *testing.T) {
		spec := testHealthAgentSpec()
		objs, err := BuildDevicePluginObjects(spec)
		require.NoError(t, err)
		c := container(healthAgentDaemonSetOf(t, objs))
		got, problem := readHealthAgent(corev1.PodSpec{Containers: []corev1.Container{{Name: *c.Name, Image: *c.Image, Args: c.Args}}})
		require.Empty(t, problem)
		require.Equal(t, *spec.HealthAgent, *got)
		require.EqualValues(t, 9500, got.Port())

		_, problem = readHealthAgent(corev1.PodSpec{Containers: []corev1.Container{{Name: *c.Name, Image: *c.Image, Args: []string{"monitor"}}}})
		require.Contains(t, problem, "arguments", "arguments someone else wrote are said, not guessed at")
	})
}

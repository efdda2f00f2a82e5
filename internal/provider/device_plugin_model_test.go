package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func TestSetFromLiveKeepsWhatTheClusterCannotTell(t *testing.T) {
	live := func(edit func(s *kube.DevicePluginSpec, l *kube.DevicePluginLive)) *kube.DevicePluginLive {
		l := &kube.DevicePluginLive{Spec: kube.DevicePluginSpec{
			Namespace: "nvidia", Name: "plugin", Image: kube.DefaultDevicePluginImage, ImagePullPolicy: "IfNotPresent",
			UpdateStrategy: "RollingUpdate", Config: kube.DefaultDevicePluginConfig(),
		}}
		edit(&l.Spec, l)
		return l
	}
	tests := []struct {
		description string
		prior       devicePluginModel
		live        *kube.DevicePluginLive
		check       func(t *testing.T, m devicePluginModel)
	}{
		{
			description: "GFD on the plugin's image reads back as no image of its own.",
			live:        live(func(s *kube.DevicePluginSpec, _ *kube.DevicePluginLive) { s.GFD = &kube.GFDSpec{Image: s.Image} }),
			check: func(t *testing.T, m devicePluginModel) {
				require.NotNil(t, m.GFD)
				require.True(t, m.GFD.Image.IsNull())
			},
		},
		{
			description: "GFD on the plugin's image stays named when the configuration named it.",
			prior:       devicePluginModel{GFD: &devicePluginGFDModel{Enabled: types.BoolValue(true), Image: types.StringValue(kube.DefaultDevicePluginImage)}},
			live:        live(func(s *kube.DevicePluginSpec, _ *kube.DevicePluginLive) { s.GFD = &kube.GFDSpec{Image: s.Image} }),
			check: func(t *testing.T, m devicePluginModel) {
				require.Equal(t, kube.DefaultDevicePluginImage, m.GFD.Image.ValueString())
			},
		},
		{
			description: "A disabled GFD block stays in the state while nothing is deployed.",
			prior:       devicePluginModel{GFD: &devicePluginGFDModel{Enabled: types.BoolValue(false), Image: types.StringNull()}},
			live:        live(func(*kube.DevicePluginSpec, *kube.DevicePluginLive) {}),
			check: func(t *testing.T, m devicePluginModel) {
				require.NotNil(t, m.GFD)
				require.False(t, m.GFD.Enabled.ValueBool())
			},
		},
		{
			description: "Without the ServiceMonitor CRD the configured service_monitor is kept.",
			prior:       devicePluginModel{DCGM: &devicePluginDCGMModel{ServiceMonitor: types.BoolValue(true)}},
			live: live(func(s *kube.DevicePluginSpec, l *kube.DevicePluginLive) {
				s.DCGM = &kube.DCGMSpec{Image: kube.DefaultDCGMExporterImage, Port: 9400}
			}),
			check: func(t *testing.T, m devicePluginModel) {
				require.True(t, m.DCGM.ServiceMonitor.ValueBool())
			},
		},
		{
			description: "With the CRD a missing ServiceMonitor is drift.",
			prior:       devicePluginModel{DCGM: &devicePluginDCGMModel{ServiceMonitor: types.BoolValue(true)}},
			live: live(func(s *kube.DevicePluginSpec, l *kube.DevicePluginLive) {
				s.DCGM = &kube.DCGMSpec{Image: kube.DefaultDCGMExporterImage, Port: 9400}
				l.ServiceMonitorKnown = true
			}),
			check: func(t *testing.T, m devicePluginModel) {
				require.False(t, m.DCGM.ServiceMonitor.ValueBool())
			},
		},
		{
			description: "A RuntimeClass deleted out of band keeps its handler and is no longer created.",
			prior:       devicePluginModel{RuntimeClass: &devicePluginRuntimeClassModel{Create: types.BoolValue(true), Name: types.StringValue("nvidia"), Handler: types.StringValue("nvidia-cdi")}},
			live: live(func(s *kube.DevicePluginSpec, _ *kube.DevicePluginLive) {
				s.RuntimeClass = &kube.RuntimeClassSpec{Name: "nvidia"}
			}),
			check: func(t *testing.T, m devicePluginModel) {
				require.False(t, m.RuntimeClass.Create.ValueBool(), "the plan creates it again")
				require.Equal(t, "nvidia-cdi", m.RuntimeClass.Handler.ValueString())
			},
		},
		{
			description: "An import gets the default waits and max_unavailable under OnDelete.",
			live:        live(func(s *kube.DevicePluginSpec, _ *kube.DevicePluginLive) { s.UpdateStrategy = "OnDelete" }),
			check: func(t *testing.T, m devicePluginModel) {
				require.True(t, m.WaitForRollout.ValueBool())
				require.True(t, m.WaitForAllocatable.ValueBool())
				require.Equal(t, "1", m.MaxUnavailable.ValueString())
				require.Nil(t, m.Config, "a config with the plugin's defaults is no block")
				require.Equal(t, "nvidia/plugin", m.ID.ValueString())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			m := tt.prior
			m.setFromLive(*tt.live)
			tt.check(t, m)
		})
	}
}

func TestResourcesValueKeepsThePriorSpellingOfTheSameAmount(t *testing.T) {
	prior := resourcesValue(corev1.ResourceRequirements{Requests: corev1.ResourceList{}}, types.ObjectNull(devicePluginResourcesType))
	require.True(t, prior.IsNull())
	prior = types.ObjectValueMust(devicePluginResourcesType, map[string]attr.Value{
		"requests": types.MapValueMust(types.StringType, map[string]attr.Value{"cpu": types.StringValue("0.5"), "memory": types.StringValue("0.5Gi")}),
		"limits":   types.MapNull(types.StringType),
	})
	read := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": k8sresource.MustParse("500m"), "memory": k8sresource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{"memory": k8sresource.MustParse("2Gi")},
	}
	got := resourcesValue(read, prior).Attributes()
	requestsMap, ok := got["requests"].(types.Map)
	require.True(t, ok)
	limitsMap, ok := got["limits"].(types.Map)
	require.True(t, ok)
	requests := requestsMap.Elements()
	require.Equal(t, types.StringValue("0.5"), requests["cpu"], "the same amount keeps the configuration's spelling")
	require.Equal(t, types.StringValue("1Gi"), requests["memory"], "a different amount is drift, as the server writes it")
	require.Equal(t, types.StringValue("2Gi"), limitsMap.Elements()["memory"], "nothing to keep: as the server writes it")
}

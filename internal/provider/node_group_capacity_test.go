package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

func TestSetLaunchTemplateFromLive(t *testing.T) {
	ctx := context.Background()
	owned := eks.OwnedLaunchTemplateName("prod", "gpu")
	block := func() []nodeGroupCapacityModel {
		return []nodeGroupCapacityModel{{ID: types.StringValue("cr-0123456789abcdef0"), InstanceType: types.StringValue("p5.48xlarge")}}
	}
	t.Run("the provider's own template is shown in capacity_reservation only, and a block keeps its type in instance_types", func(t *testing.T) {
		m := nodeGroupModel{CapacityReservation: block(), InstanceTypes: stringListValue(nil)}
		m.setLaunchTemplateFromLive(eks.NodeGroup{NodeGroupSpec: eks.NodeGroupSpec{ClusterName: "prod", Name: "gpu",
			LaunchTemplate: &eks.LaunchTemplate{ID: "lt-0123456789abcdef0", Name: owned, Version: "2"}}})
		require.Nil(t, m.LaunchTemplate)
		require.Equal(t, "lt-0123456789abcdef0", m.CapacityReservation[0].LaunchTemplateID.ValueString())
		require.Equal(t, "2", m.CapacityReservation[0].LaunchTemplateVersion.ValueString())
		require.Equal(t, []string{"p5.48xlarge"}, stringsOf(ctx, m.InstanceTypes))
	})
	t.Run("the user's template keeps the version the user named; the merged one is in capacity_reservation", func(t *testing.T) {
		m := nodeGroupModel{CapacityReservation: block(), LaunchTemplate: []nodeGroupLaunchTemplateModel{{
			ID: types.StringValue("lt-0fedcba9876543210"), Name: types.StringUnknown(), Version: types.StringValue("1"),
		}}}
		m.setLaunchTemplateFromLive(eks.NodeGroup{NodeGroupSpec: eks.NodeGroupSpec{ClusterName: "prod", Name: "gpu", InstanceTypes: []string{"p5.48xlarge"},
			LaunchTemplate: &eks.LaunchTemplate{ID: "lt-0fedcba9876543210", Name: "mine", Version: "7"}}})
		require.Equal(t, "1", m.LaunchTemplate[0].Version.ValueString())
		require.Equal(t, "mine", m.LaunchTemplate[0].Name.ValueString())
		require.Equal(t, "7", m.CapacityReservation[0].LaunchTemplateVersion.ValueString())
	})
	t.Run("without capacity_reservation the template is the user's, as EKS reports it", func(t *testing.T) {
		var m nodeGroupModel
		m.setLaunchTemplateFromLive(eks.NodeGroup{NodeGroupSpec: eks.NodeGroupSpec{ClusterName: "prod", Name: "gpu",
			LaunchTemplate: &eks.LaunchTemplate{ID: "lt-0fedcba9876543210", Name: "mine", Version: "3"}}})
		require.Len(t, m.LaunchTemplate, 1)
		require.Equal(t, "3", m.LaunchTemplate[0].Version.ValueString())
	})
}

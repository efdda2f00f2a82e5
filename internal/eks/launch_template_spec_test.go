package eks

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/stretchr/testify/require"
)

func TestCapacityTemplateData_blockHasMarketTypeInstanceTypeAndNoImage(t *testing.T) {
	d := capacityTemplateData(CapacityTarget{ReservationID: "cr-0123456789abcdef0", Block: true, InstanceType: "p5.48xlarge"}, 0, "AL2023_x86_64_NVIDIA")
	require.Equal(t, "cr-0123456789abcdef0", aws.ToString(d.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId))
	require.Nil(t, d.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationResourceGroupArn)
	require.Equal(t, ec2types.MarketTypeCapacityBlock, d.InstanceMarketOptions.MarketType)
	require.Equal(t, ec2types.InstanceType("p5.48xlarge"), d.InstanceType)
	require.Nil(t, d.ImageId, "EKS picks the AMI by amiType only when the template has no ImageId")
	require.Empty(t, d.BlockDeviceMappings)
}

func TestCapacityTemplateData_reservationGroupWithDiskHasNoMarketOptions(t *testing.T) {
	arn := "arn:aws:resource-groups:us-west-2:111122223333:group/gpu-odcrs"
	d := capacityTemplateData(CapacityTarget{ResourceGroupARN: arn}, 200, "BOTTLEROCKET_x86_64_NVIDIA")
	require.Equal(t, arn, aws.ToString(d.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationResourceGroupArn))
	require.Nil(t, d.InstanceMarketOptions)
	require.Empty(t, string(d.InstanceType))
	require.Len(t, d.BlockDeviceMappings, 1)
	require.Equal(t, "/dev/xvdb", aws.ToString(d.BlockDeviceMappings[0].DeviceName))
	require.Equal(t, int32(200), aws.ToInt32(d.BlockDeviceMappings[0].Ebs.VolumeSize))
}

func TestTargetFromTemplateData_readsBackWhatWasWritten(t *testing.T) {
	want := CapacityTarget{ReservationID: "cr-0123456789abcdef0", Block: true, InstanceType: "p5.48xlarge"}
	req := capacityTemplateData(want, 100, "AL2023_x86_64_NVIDIA")
	resp := &ec2types.ResponseLaunchTemplateData{
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationResponse{
			CapacityReservationTarget: &ec2types.CapacityReservationTargetResponse{CapacityReservationId: req.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId},
		},
		InstanceMarketOptions: &ec2types.LaunchTemplateInstanceMarketOptions{MarketType: req.InstanceMarketOptions.MarketType},
		InstanceType:          req.InstanceType,
		BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMapping{{
			DeviceName: req.BlockDeviceMappings[0].DeviceName, Ebs: &ec2types.LaunchTemplateEbsBlockDevice{VolumeSize: req.BlockDeviceMappings[0].Ebs.VolumeSize},
		}},
	}
	got := targetFromTemplateData(resp)
	require.Equal(t, want, got.CapacityTarget)
	require.True(t, sameTarget(got, want, 100))
	require.False(t, sameTarget(got, want, 200), "a new disk size is a new version")
	require.False(t, sameTarget(got, CapacityTarget{ReservationID: "cr-0fedcba9876543210", Block: true, InstanceType: "p5.48xlarge"}, 100),
		"a block replaced by a new ID is a new version")
}

func TestOwnedLaunchTemplateName_fitsEC2sLimitAndStaysDistinct(t *testing.T) {
	require.Equal(t, "gpu-ng-prod-gpu", OwnedLaunchTemplateName("prod", "gpu"))
	long := strings.Repeat("c", 100)
	a, b := OwnedLaunchTemplateName(long, strings.Repeat("n", 63)), OwnedLaunchTemplateName(long, strings.Repeat("n", 62)+"m")
	require.Len(t, a, launchTemplateNameMax)
	require.NotEqual(t, a, b)
}

func TestWithCapacityLaunchTemplate_movesDiskAndBlockTypeIntoTheTemplate(t *testing.T) {
	spec := NodeGroupSpec{InstanceTypes: []string{"p5.48xlarge"}, DiskSize: 200,
		CapacityReservation: &CapacityTarget{ReservationID: "cr-0123456789abcdef0", Block: true, InstanceType: "p5.48xlarge"}}
	got := spec.WithCapacityLaunchTemplate(LaunchTemplate{ID: "lt-0123456789abcdef0", Version: "3"})
	require.Equal(t, &LaunchTemplate{ID: "lt-0123456789abcdef0", Version: "3"}, got.LaunchTemplate)
	require.Zero(t, got.DiskSize, "EKS refuses diskSize next to a launch template")
	require.Nil(t, got.InstanceTypes, "EKS refuses instanceTypes when the template has the block's type")
	require.Equal(t, []string{"p5.48xlarge"}, spec.InstanceTypes, "the caller's spec is left as it was")

	spec.CapacityReservation = &CapacityTarget{ReservationID: "cr-0123456789abcdef0"}
	require.Equal(t, []string{"p5.48xlarge"}, spec.WithCapacityLaunchTemplate(LaunchTemplate{ID: "lt-0123456789abcdef0", Version: "1"}).InstanceTypes,
		"an On-Demand Capacity Reservation's group names its types itself")
}

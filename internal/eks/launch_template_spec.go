package eks

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CapacityTarget is the EC2 capacity reservation a node group's instances
// launch into: an On-Demand Capacity Reservation or a Capacity Block for ML,
// by ID, or a capacity reservation resource group by ARN (exactly one).
//
// EKS takes a reservation only through the group's launch template
// (CapacityReservationSpecification.CapacityReservationTarget); for a
// Capacity Block it also wants InstanceMarketOptions.MarketType
// "capacity-block" and the block's InstanceType in the template, with
// capacityType CAPACITY_BLOCK, and rejects the create when any is missing:
// https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html
// The template carries no ImageId, so EKS keeps choosing the AMI by amiType
// and merging its bootstrap user data (launch-templates.html, "Specifying an
// AMI").
type CapacityTarget struct {
	ReservationID    string // "cr-..."
	ResourceGroupARN string // "arn:aws:resource-groups:...:group/..."
	// Block: a Capacity Block for ML (MarketType "capacity-block").
	Block bool
	// InstanceType is the block's instance type, written into the template
	// (EKS requires it for blocks, and then refuses instanceTypes on the
	// group); empty for On-Demand Capacity Reservations.
	InstanceType string
}

// Owned launch templates: the provider names its template after the node
// group and tags it, so that one left by an apply cut short is found and
// adopted rather than duplicated, and never confused with a user's.
const (
	// OwnedLaunchTemplateTag is the tag key on templates the provider owns;
	// its value is "cluster:nodegroup".
	OwnedLaunchTemplateTag    = "terraform-provider-gpu/node-group"
	ownedLaunchTemplatePrefix = "gpu-ng-"
	// launchTemplateNameMax is EC2's limit on a launch template name
	// (CreateLaunchTemplate: 3 to 128 characters).
	launchTemplateNameMax = 128
)

// OwnedLaunchTemplateName is the name of the launch template the provider
// creates for a node group: "gpu-ng-<cluster>-<nodegroup>", shortened with a
// hash of both when longer than EC2 allows.
func OwnedLaunchTemplateName(cluster, nodeGroup string) string {
	name := ownedLaunchTemplatePrefix + cluster + "-" + nodeGroup
	if len(name) <= launchTemplateNameMax {
		return name
	}
	sum := sha256.Sum256([]byte(cluster + ":" + nodeGroup))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return name[:launchTemplateNameMax-len(suffix)] + suffix
}

// ownedTagValue is the OwnedLaunchTemplateTag value of a node group's template.
func ownedTagValue(cluster, nodeGroup string) string { return cluster + ":" + nodeGroup }

// rootDeviceName is the device whose size EKS's diskSize sets for the AMI
// type: Bottlerocket's data volume /dev/xvdb, the root volume /dev/xvda
// of the Amazon Linux AMIs.
func rootDeviceName(amiType string) string {
	if strings.HasPrefix(amiType, "BOTTLEROCKET") {
		return "/dev/xvdb"
	}
	return "/dev/xvda"
}

// capacityTemplateData is what a launch template version must hold to put
// the group's instances into t: the reservation target, for a block the
// capacity-block market and its instance type, and the disk diskSize asks
// (EKS refuses diskSize on a group with a launch template, so the size
// moves into the template; 0 leaves the AMI's).
func capacityTemplateData(t CapacityTarget, diskSizeGiB int32, amiType string) *ec2types.RequestLaunchTemplateData {
	target := &ec2types.CapacityReservationTarget{}
	if t.ReservationID != "" {
		target.CapacityReservationId = aws.String(t.ReservationID)
	} else {
		target.CapacityReservationResourceGroupArn = aws.String(t.ResourceGroupARN)
	}
	d := &ec2types.RequestLaunchTemplateData{
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationTarget: target},
	}
	if t.Block {
		d.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		d.InstanceType = ec2types.InstanceType(t.InstanceType)
	}
	if diskSizeGiB > 0 {
		d.BlockDeviceMappings = []ec2types.LaunchTemplateBlockDeviceMappingRequest{{
			DeviceName: aws.String(rootDeviceName(amiType)),
			Ebs:        &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(diskSizeGiB), VolumeType: ec2types.VolumeTypeGp3},
		}}
	}
	return d
}

// LaunchTemplateTarget is the capacity targeting a launch template version
// holds, as DescribeLaunchTemplateVersions tells it.
type LaunchTemplateTarget struct {
	CapacityTarget
	DiskSizeGiB int32
}

// targetFromTemplateData reads the capacity fields of a version's data.
func targetFromTemplateData(d *ec2types.ResponseLaunchTemplateData) LaunchTemplateTarget {
	var out LaunchTemplateTarget
	if d == nil {
		return out
	}
	if s := d.CapacityReservationSpecification; s != nil && s.CapacityReservationTarget != nil {
		out.ReservationID = aws.ToString(s.CapacityReservationTarget.CapacityReservationId)
		out.ResourceGroupARN = aws.ToString(s.CapacityReservationTarget.CapacityReservationResourceGroupArn)
	}
	if m := d.InstanceMarketOptions; m != nil && m.MarketType == ec2types.MarketTypeCapacityBlock {
		out.Block = true
	}
	out.InstanceType = string(d.InstanceType)
	for _, b := range d.BlockDeviceMappings {
		if b.Ebs != nil && b.Ebs.VolumeSize != nil {
			out.DiskSizeGiB = aws.ToInt32(b.Ebs.VolumeSize)
		}
	}
	return out
}

// sameTarget says whether a version's data already holds what want asks.
func sameTarget(have LaunchTemplateTarget, want CapacityTarget, diskSizeGiB int32) bool {
	if have.ReservationID != want.ReservationID || have.ResourceGroupARN != want.ResourceGroupARN || have.Block != want.Block {
		return false
	}
	if want.Block && have.InstanceType != want.InstanceType {
		return false
	}
	return have.DiskSizeGiB == diskSizeGiB
}

func versionString(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

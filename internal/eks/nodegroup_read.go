package eks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// ReadNodeGroup describes a node group; found is false when EKS says it does
// not exist (ResourceNotFoundException), which is not an error.
func (c *Client) ReadNodeGroup(ctx context.Context, cluster, name string) (NodeGroup, bool, error) {
	out, err := c.eks.DescribeNodegroup(ctx, &awseks.DescribeNodegroupInput{
		ClusterName:   aws.String(cluster),
		NodegroupName: aws.String(name),
	})
	if apiErrorCode(err) == "ResourceNotFoundException" {
		return NodeGroup{}, false, nil
	}
	if err != nil {
		return NodeGroup{}, false, fmt.Errorf("reading EKS node group (%s:%s): %w", cluster, name, err)
	}
	return nodeGroupFromEKS(out.Nodegroup), true, nil
}

func nodeGroupFromEKS(ng *ekstypes.Nodegroup) NodeGroup {
	if ng == nil {
		return NodeGroup{}
	}
	g := NodeGroup{
		NodeGroupSpec: NodeGroupSpec{
			ClusterName:    aws.ToString(ng.ClusterName),
			Name:           aws.ToString(ng.NodegroupName),
			NodeRoleARN:    aws.ToString(ng.NodeRole),
			SubnetIDs:      ng.Subnets,
			InstanceTypes:  ng.InstanceTypes,
			AMIType:        string(ng.AmiType),
			CapacityType:   string(ng.CapacityType),
			DiskSize:       aws.ToInt32(ng.DiskSize),
			Labels:         ng.Labels,
			ReleaseVersion: aws.ToString(ng.ReleaseVersion),
			Version:        aws.ToString(ng.Version),
			Tags:           ng.Tags,
		},
		ARN:       aws.ToString(ng.NodegroupArn),
		Status:    string(ng.Status),
		CreatedAt: aws.ToTime(ng.CreatedAt),
	}
	if s := ng.ScalingConfig; s != nil {
		g.Scaling = Scaling{Min: aws.ToInt32(s.MinSize), Max: aws.ToInt32(s.MaxSize), Desired: aws.ToInt32(s.DesiredSize)}
	}
	if u := ng.UpdateConfig; u != nil && (u.MaxUnavailable != nil || u.MaxUnavailablePercentage != nil || u.UpdateStrategy != "") {
		g.UpdateConfig = &UpdateConfig{MaxUnavailable: aws.ToInt32(u.MaxUnavailable), MaxUnavailablePercentage: aws.ToInt32(u.MaxUnavailablePercentage),
			UpdateStrategy: string(u.UpdateStrategy)}
	}
	g.NodeRepair = nodeRepairFromEKS(ng.NodeRepairConfig)
	for _, t := range ng.Taints {
		g.Taints = append(g.Taints, Taint{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value), Effect: string(t.Effect)})
	}
	if lt := ng.LaunchTemplate; lt != nil {
		g.LaunchTemplate = &LaunchTemplate{ID: aws.ToString(lt.Id), Name: aws.ToString(lt.Name), Version: aws.ToString(lt.Version)}
	}
	if ng.Health != nil {
		for _, i := range ng.Health.Issues {
			g.Health = append(g.Health, Issue{Code: string(i.Code), Message: aws.ToString(i.Message), ResourceIDs: i.ResourceIds})
		}
	}
	if ng.Resources != nil {
		for _, a := range ng.Resources.AutoScalingGroups {
			g.AutoScalingGroupNames = append(g.AutoScalingGroupNames, aws.ToString(a.Name))
		}
	}
	return g
}

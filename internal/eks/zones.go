package eks

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// SubnetZones returns the availability zone of each subnet (DescribeSubnets).
// Subnets EC2 does not know give *UnknownSubnetsError naming all of them.
func (c *Client) SubnetZones(ctx context.Context, subnetIDs []string) (map[string]string, error) {
	zones := make(map[string]string, len(subnetIDs))
	if len(subnetIDs) == 0 {
		return zones, nil
	}
	// Asking by SubnetIds fails whole (InvalidSubnetID.NotFound) when one is
	// unknown; a subnet-id filter answers the known ones, so the unknown can be named.
	p := ec2.NewDescribeSubnetsPaginator(c.ec2, &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: subnetIDs}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing subnets %v: %w", subnetIDs, err)
		}
		for _, s := range page.Subnets {
			zones[aws.ToString(s.SubnetId)] = aws.ToString(s.AvailabilityZone)
		}
	}
	var unknown []string
	for _, id := range subnetIDs {
		if _, ok := zones[id]; !ok && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return nil, &UnknownSubnetsError{IDs: unknown, Region: c.region}
	}
	return zones, nil
}

// OfferedZones returns, for each instance type, the availability zones of the
// region that offer it (DescribeInstanceTypeOfferings by availability zone),
// sorted. A type offered nowhere maps to no zones.
func (c *Client) OfferedZones(ctx context.Context, instanceTypes []string) (map[string][]string, error) {
	out := make(map[string][]string, len(instanceTypes))
	for _, t := range instanceTypes {
		out[t] = nil
	}
	if len(instanceTypes) == 0 {
		return out, nil
	}
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters:      []ec2types.Filter{{Name: aws.String("instance-type"), Values: instanceTypes}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the availability zones offering %v: %w", instanceTypes, err)
		}
		for _, o := range page.InstanceTypeOfferings {
			t, zone := string(o.InstanceType), aws.ToString(o.Location)
			if !slices.Contains(out[t], zone) {
				out[t] = append(out[t], zone)
			}
		}
	}
	for t := range out {
		slices.Sort(out[t])
	}
	return out, nil
}

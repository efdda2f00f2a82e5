package eks

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CapacityBlockFacts are what DescribeCapacityBlocks and
// DescribeCapacityBlockStatus add to a capacity-block reservation: the
// block it belongs to (an UltraServer block holds several reservations)
// and the block's capacity and interconnect status.
type CapacityBlockFacts struct {
	ID, State       string // the block's ("cb-..."); state: active, scheduled, expired, ...
	UltraServerType string // empty for an instance block
	ReservationIDs  []string
	// InterconnectStatus is "ok", "impaired" or "insufficient-data"; empty
	// when EC2 gave no status.
	InterconnectStatus                                    string
	TotalCapacity, AvailableCapacity, UnavailableCapacity int32
}

// CapacityTopology is where EC2 placed a reservation's capacity
// (DescribeCapacityReservationTopology), for the instance types and states
// EC2 gives it for: the network nodes from the top of the tree down.
type CapacityTopology struct {
	GroupName, State string
	NetworkNodes     []string
}

// describeCapacityBlocks lists the account's Capacity Blocks with their
// status, keyed by block ID (DescribeCapacityBlocks and
// DescribeCapacityBlockStatus, all pages of each).
func (c *Client) describeCapacityBlocks(ctx context.Context) (map[string]*CapacityBlockFacts, error) {
	out := map[string]*CapacityBlockFacts{}
	blocks := ec2.NewDescribeCapacityBlocksPaginator(c.ec2, &ec2.DescribeCapacityBlocksInput{})
	for blocks.HasMorePages() {
		page, err := blocks.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing EC2 Capacity Blocks: %w", err)
		}
		for _, b := range page.CapacityBlocks {
			f := capacityBlockFactsFromEC2(b)
			out[f.ID] = &f
		}
	}
	statuses := ec2.NewDescribeCapacityBlockStatusPaginator(c.ec2, &ec2.DescribeCapacityBlockStatusInput{})
	for statuses.HasMorePages() {
		page, err := statuses.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the status of EC2 Capacity Blocks: %w", err)
		}
		for _, s := range page.CapacityBlockStatuses {
			if f := out[aws.ToString(s.CapacityBlockId)]; f != nil {
				addCapacityBlockStatus(f, s)
			}
		}
	}
	return out, nil
}

// describeTopology lists the topology EC2 gives for the account's
// reservations, keyed by reservation ID (DescribeCapacityReservationTopology,
// all pages, asked without IDs so reservations of types EC2 gives no
// topology for are simply absent).
func (c *Client) describeTopology(ctx context.Context, zones []string) (map[string]*CapacityTopology, error) {
	in := &ec2.DescribeCapacityReservationTopologyInput{}
	if len(zones) > 0 {
		in.Filters = []ec2types.Filter{{Name: aws.String("availability-zone"), Values: zones}}
	}
	out := map[string]*CapacityTopology{}
	for {
		page, err := c.ec2.DescribeCapacityReservationTopology(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing the topology of EC2 capacity reservations: %w", err)
		}
		for _, t := range page.CapacityReservations {
			if len(t.NetworkNodes) == 0 {
				continue // no placement to tell (a type or state EC2 gives none for)
			}
			out[aws.ToString(t.CapacityReservationId)] = &CapacityTopology{
				GroupName: aws.ToString(t.GroupName), State: aws.ToString(t.State), NetworkNodes: slices.Clone(t.NetworkNodes),
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

func capacityBlockFactsFromEC2(b ec2types.CapacityBlock) CapacityBlockFacts {
	return CapacityBlockFacts{
		ID:              aws.ToString(b.CapacityBlockId),
		State:           string(b.State),
		UltraServerType: aws.ToString(b.UltraserverType),
		ReservationIDs:  slices.Clone(b.CapacityReservationIds),
	}
}

func addCapacityBlockStatus(f *CapacityBlockFacts, s ec2types.CapacityBlockStatus) {
	f.InterconnectStatus = string(s.InterconnectStatus)
	f.TotalCapacity = aws.ToInt32(s.TotalCapacity)
	f.AvailableCapacity = aws.ToInt32(s.TotalAvailableCapacity)
	f.UnavailableCapacity = aws.ToInt32(s.TotalUnavailableCapacity)
}

// addDetails merges block facts and topology into the reservations, as the
// filter asks.
func (c *Client) addDetails(ctx context.Context, rs []CapacityReservation, f CapacityFilter) error {
	if f.BlockDetails && slices.ContainsFunc(rs, func(r CapacityReservation) bool { return r.CapacityBlockID != "" }) {
		blocks, err := c.describeCapacityBlocks(ctx)
		if err != nil {
			return err
		}
		for i := range rs {
			rs[i].Block = blocks[rs[i].CapacityBlockID]
		}
	}
	if f.Topology && len(rs) > 0 {
		topology, err := c.describeTopology(ctx, f.AvailabilityZones)
		if err != nil {
			return err
		}
		for i := range rs {
			rs[i].Topology = topology[rs[i].ID]
		}
	}
	return nil
}

package eks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CapacityReservation is one EC2 capacity reservation: an On-Demand
// Capacity Reservation (ReservationType "default") or a Capacity Block for ML
// ("capacity-block"), as DescribeCapacityReservations tells it.
type CapacityReservation struct {
	ID, ARN, InstanceType, AvailabilityZone string
	// State is EC2's CapacityReservationState: active, scheduled, expired,
	// pending, payment-pending, payment-failed, failed, ... (ec2types).
	State string
	// ReservationType is "default" (an On-Demand Capacity Reservation) or
	// "capacity-block".
	ReservationType string
	// Tenancy is "default" or "dedicated"; InstanceMatchCriteria "open" or
	// "targeted" (blocks are always targeted).
	Tenancy, InstanceMatchCriteria     string
	TotalInstances, AvailableInstances int32
	// End is zero when the reservation has no end date (EndDateType unlimited).
	Start, End time.Time

	AvailabilityZoneID string
	EndDateType        string // "unlimited" | "limited"
	InstancePlatform   string // e.g. "Linux/UNIX"
	OwnerID            string
	CreateDate         time.Time
	PlacementGroupARN  string
	// CapacityBlockID is the block ("cb-...") a capacity-block reservation
	// belongs to; empty for On-Demand Capacity Reservations.
	CapacityBlockID string
	// GPU is the instance type's NVIDIA GPUs (DescribeInstanceTypes); zero
	// when the type has none.
	GPU Accelerator
	// Block is the Capacity Block's facts, with CapacityFilter.BlockDetails
	// and when EC2 gives them (capacity_block_details.go); else nil.
	Block *CapacityBlockFacts
	// Topology is where EC2 placed the capacity, with
	// CapacityFilter.Topology and when EC2 gives it; else nil.
	Topology *CapacityTopology
}

// Reservation types (EC2's CapacityReservationType).
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

// IsCapacityBlock says whether r is a Capacity Block for ML.
func (r CapacityReservation) IsCapacityBlock() bool {
	return r.ReservationType == ReservationTypeCapacityBlock
}

// CapacityFilter selects capacity reservations. Zero fields select everything.
type CapacityFilter struct {
	IDs               []string // reservation IDs ("cr-..."); EC2 answers InvalidCapacityReservationId.NotFound when one is unknown
	InstanceTypes     []string // asked of EC2 (filter instance-type)
	AvailabilityZones []string // asked of EC2 (filter availability-zone)
	States            []string // EC2 states, asked of EC2 (filter state)
	// NVIDIAGPUs keeps reservations of instance types with NVIDIA GPUs.
	NVIDIAGPUs bool
	// GPUProducts keeps reservations whose type's NVIDIA GPU is so named
	// ("H100"), case-insensitively; implies NVIDIAGPUs.
	GPUProducts                              []string
	MinTotalInstances, MinAvailableInstances int32
	// From and To keep reservations whose [Start, End) overlaps [From, To];
	// zero: unbounded. A reservation without an end date reaches any To.
	From, To time.Time
	// BlockDetails fills CapacityReservation.Block (DescribeCapacityBlocks,
	// DescribeCapacityBlockStatus); Topology fills .Topology
	// (DescribeCapacityReservationTopology). Off: no such call.
	BlockDetails, Topology bool
}

// capacityReservationNotFound is EC2's error code for an unknown reservation ID.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
const capacityReservationNotFound = "InvalidCapacityReservationId.NotFound"

// CapacityReservation describes one reservation by ID. found is false when
// EC2 answers InvalidCapacityReservationId.NotFound.
func (c *Client) CapacityReservation(ctx context.Context, id string) (CapacityReservation, bool, error) {
	rs, err := c.CapacityReservations(ctx, CapacityFilter{IDs: []string{id}})
	if apiErrorCode(err) == capacityReservationNotFound {
		return CapacityReservation{}, false, nil
	}
	if err != nil {
		return CapacityReservation{}, false, err
	}
	for _, r := range rs {
		if r.ID == id {
			return r, true, nil
		}
	}
	return CapacityReservation{}, false, nil
}

// CapacityReservations lists the reservations that pass the filter, sorted by
// start then ID: DescribeCapacityReservations (all pages), and
// DescribeInstanceTypes (cached) for the GPU of each type.
func (c *Client) CapacityReservations(ctx context.Context, f CapacityFilter) ([]CapacityReservation, error) {
	in := &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: f.IDs}
	for name, values := range map[string][]string{
		"instance-type":     f.InstanceTypes,
		"availability-zone": f.AvailabilityZones,
		"state":             f.States,
	} {
		if len(values) > 0 {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String(name), Values: values})
		}
	}
	slices.SortFunc(in.Filters, func(a, b ec2types.Filter) int { return strings.Compare(*a.Name, *b.Name) })
	var all []CapacityReservation
	p := ec2.NewDescribeCapacityReservationsPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing EC2 capacity reservations%s: %w", idsPhrase(f.IDs), err)
		}
		for _, cr := range page.CapacityReservations {
			all = append(all, capacityReservationFromEC2(cr))
		}
	}
	gpus, err := c.nvidiaGPUsOf(ctx, uniqueInstanceTypes(all))
	if err != nil {
		return nil, err
	}
	kept := all[:0]
	for _, r := range all {
		r.GPU = gpus[r.InstanceType]
		if f.selects(r) {
			kept = append(kept, r)
		}
	}
	if err := c.addDetails(ctx, kept, f); err != nil {
		return nil, err
	}
	slices.SortFunc(kept, func(a, b CapacityReservation) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return kept, nil
}

func (f CapacityFilter) selects(r CapacityReservation) bool {
	if (f.NVIDIAGPUs || len(f.GPUProducts) > 0) && r.GPU.Count == 0 {
		return false
	}
	if len(f.GPUProducts) > 0 && !slices.ContainsFunc(f.GPUProducts, func(p string) bool { return strings.EqualFold(p, r.GPU.Name) }) {
		return false
	}
	if r.TotalInstances < f.MinTotalInstances || r.AvailableInstances < f.MinAvailableInstances {
		return false
	}
	if !f.To.IsZero() && !r.Start.IsZero() && !r.Start.Before(f.To) {
		return false
	}
	if !f.From.IsZero() && !r.End.IsZero() && !r.End.After(f.From) {
		return false
	}
	return true
}

// nvidiaGPUsOf answers the NVIDIA GPUs of each named instance type that has
// some. A type EC2 does not describe (retired from the region while a
// reservation of it lives on) is taken as having none.
func (c *Client) nvidiaGPUsOf(ctx context.Context, names []string) (map[string]Accelerator, error) {
	types, err := c.InstanceTypes(ctx, names)
	var unknown *UnknownInstanceTypesError
	if errors.As(err, &unknown) {
		known := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(unknown.Names, n) })
		types, err = c.InstanceTypes(ctx, known)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Accelerator{}
	for name, t := range types {
		if gpu, ok := t.NVIDIAGPUs(); ok {
			out[name] = gpu
		}
	}
	return out, nil
}

func uniqueInstanceTypes(rs []CapacityReservation) []string {
	var names []string
	for _, r := range rs {
		if r.InstanceType != "" && !slices.Contains(names, r.InstanceType) {
			names = append(names, r.InstanceType)
		}
	}
	return names
}

// idsPhrase names the asked IDs in an error, or nothing when none were asked.
func idsPhrase(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " " + strings.Join(ids, ", ")
}

func capacityReservationFromEC2(cr ec2types.CapacityReservation) CapacityReservation {
	return CapacityReservation{
		ID:                    aws.ToString(cr.CapacityReservationId),
		ARN:                   aws.ToString(cr.CapacityReservationArn),
		InstanceType:          aws.ToString(cr.InstanceType),
		AvailabilityZone:      aws.ToString(cr.AvailabilityZone),
		State:                 string(cr.State),
		ReservationType:       reservationType(cr.ReservationType),
		Tenancy:               string(cr.Tenancy),
		InstanceMatchCriteria: string(cr.InstanceMatchCriteria),
		TotalInstances:        aws.ToInt32(cr.TotalInstanceCount),
		AvailableInstances:    aws.ToInt32(cr.AvailableInstanceCount),
		Start:                 aws.ToTime(cr.StartDate),
		End:                   aws.ToTime(cr.EndDate),
		AvailabilityZoneID:    aws.ToString(cr.AvailabilityZoneId),
		EndDateType:           string(cr.EndDateType),
		InstancePlatform:      string(cr.InstancePlatform),
		OwnerID:               aws.ToString(cr.OwnerId),
		CreateDate:            aws.ToTime(cr.CreateDate),
		PlacementGroupARN:     aws.ToString(cr.PlacementGroupArn),
		CapacityBlockID:       aws.ToString(cr.CapacityBlockId),
	}
}

// reservationType is EC2's reservationType. An answer without one is taken
// as an On-Demand Capacity Reservation: blocks are the ones EC2 marks.
func reservationType(t ec2types.CapacityReservationType) string {
	if t == "" {
		return ReservationTypeDefault
	}
	return string(t)
}

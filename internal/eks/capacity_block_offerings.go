package eks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// What EC2 sells as Capacity Blocks, from the API reference of
// DescribeCapacityBlockOfferings: durations in 1-day increments up to 14
// days and 7-day increments up to 182 days; 1, 2, 4, 8, 16, 32 or 64
// instances.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockOfferings.html
var CapacityBlockInstanceCounts = []int32{1, 2, 4, 8, 16, 32, 64}

// CapacityBlockDurationValid says whether EC2 sells Capacity Blocks of that
// many hours.
func CapacityBlockDurationValid(hours int32) bool {
	if hours <= 0 || hours%24 != 0 {
		return false
	}
	days := hours / 24
	return days <= 14 || (days%7 == 0 && days <= 182)
}

// OfferingFilter asks for Capacity Block offerings. InstanceCount and
// DurationHours are required (EC2 answers nothing without them).
type OfferingFilter struct {
	// InstanceTypes are asked one by one (EC2 takes one type a call); empty:
	// every NVIDIA GPU type of the region whose GPU passes GPUProducts.
	InstanceTypes []string
	GPUProducts   []string
	InstanceCount int32
	DurationHours int32
	// From is the earliest start (StartDateRange), To the latest end
	// (EndDateRange); zero: EC2's defaults.
	From, To time.Time
	// AvailabilityZones keeps offerings in these zones; empty: all.
	AvailabilityZones []string
}

// CapacityBlockOffering is one Capacity Block EC2 offers to sell.
type CapacityBlockOffering struct {
	ID, InstanceType, AvailabilityZone string
	InstanceCount, DurationHours       int32
	DurationMinutes                    int32 // EC2's extra minutes past DurationHours, when it gives them
	Start, End                         time.Time
	UpfrontFee, CurrencyCode           string // EC2's decimal string, e.g. "31464.00", and "USD"
	Tenancy                            string
	UltraServerType                    string
	UltraServerCount                   int32
	GPU                                Accelerator // the type's NVIDIA GPUs
}

// CapacityBlockOfferings lists the offerings for the NVIDIA GPU types the
// filter names (DescribeCapacityBlockOfferings, all pages, one call per
// type), ordered by earliest start, then fee, type, zone and ID. Types
// without NVIDIA GPUs are not asked.
func (c *Client) CapacityBlockOfferings(ctx context.Context, f OfferingFilter) ([]CapacityBlockOffering, error) {
	if f.InstanceCount <= 0 || f.DurationHours <= 0 {
		return nil, fmt.Errorf("describing EC2 Capacity Block offerings: an instance count and a duration are required (got %d instances, %d hours)", f.InstanceCount, f.DurationHours)
	}
	gpus, err := c.offeringTypes(ctx, f)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(gpus))
	for n := range gpus {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []CapacityBlockOffering
	for _, name := range names {
		in := &ec2.DescribeCapacityBlockOfferingsInput{
			InstanceType:          aws.String(name),
			InstanceCount:         aws.Int32(f.InstanceCount),
			CapacityDurationHours: aws.Int32(f.DurationHours),
		}
		if !f.From.IsZero() {
			in.StartDateRange = aws.Time(f.From)
		}
		if !f.To.IsZero() {
			in.EndDateRange = aws.Time(f.To)
		}
		p := ec2.NewDescribeCapacityBlockOfferingsPaginator(c.ec2, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing EC2 Capacity Block offerings of %d %s for %d hours: %w", f.InstanceCount, name, f.DurationHours, err)
			}
			for _, o := range page.CapacityBlockOfferings {
				off := capacityBlockOfferingFromEC2(o)
				if len(f.AvailabilityZones) > 0 && !slices.Contains(f.AvailabilityZones, off.AvailabilityZone) {
					continue
				}
				off.GPU = gpus[off.InstanceType]
				out = append(out, off)
			}
		}
	}
	slices.SortFunc(out, CompareOfferingsByStart)
	return out, nil
}

// offeringTypes are the NVIDIA GPU types to ask about, with their GPUs.
func (c *Client) offeringTypes(ctx context.Context, f OfferingFilter) (map[string]Accelerator, error) {
	names := f.InstanceTypes
	if len(names) == 0 {
		all, err := c.allInstanceTypes(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range all {
			names = append(names, t.Name)
		}
	}
	gpus, err := c.nvidiaGPUsOf(ctx, names)
	if err != nil {
		return nil, err
	}
	for name, gpu := range gpus {
		if len(f.GPUProducts) > 0 && !slices.ContainsFunc(f.GPUProducts, func(p string) bool { return strings.EqualFold(p, gpu.Name) }) {
			delete(gpus, name)
		}
	}
	return gpus, nil
}

// CompareOfferingsByStart orders offerings by earliest start, then fee,
// type, zone and ID.
func CompareOfferingsByStart(a, b CapacityBlockOffering) int {
	if c := a.Start.Compare(b.Start); c != 0 {
		return c
	}
	return compareOfferingsRest(a, b)
}

// CompareOfferingsByPrice orders offerings by upfront fee, then start,
// type, zone and ID.
func CompareOfferingsByPrice(a, b CapacityBlockOffering) int {
	if c := compareFees(a.UpfrontFee, b.UpfrontFee); c != 0 {
		return c
	}
	if c := a.Start.Compare(b.Start); c != 0 {
		return c
	}
	return compareOfferingsRest(a, b)
}

func compareOfferingsRest(a, b CapacityBlockOffering) int {
	if c := compareFees(a.UpfrontFee, b.UpfrontFee); c != 0 {
		return c
	}
	if c := strings.Compare(a.InstanceType, b.InstanceType); c != 0 {
		return c
	}
	if c := strings.Compare(a.AvailabilityZone, b.AvailabilityZone); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func capacityBlockOfferingFromEC2(o ec2types.CapacityBlockOffering) CapacityBlockOffering {
	return CapacityBlockOffering{
		ID:               aws.ToString(o.CapacityBlockOfferingId),
		InstanceType:     aws.ToString(o.InstanceType),
		AvailabilityZone: aws.ToString(o.AvailabilityZone),
		InstanceCount:    aws.ToInt32(o.InstanceCount),
		DurationHours:    aws.ToInt32(o.CapacityBlockDurationHours),
		DurationMinutes:  aws.ToInt32(o.CapacityBlockDurationMinutes),
		Start:            aws.ToTime(o.StartDate),
		End:              aws.ToTime(o.EndDate),
		UpfrontFee:       aws.ToString(o.UpfrontFee),
		CurrencyCode:     aws.ToString(o.CurrencyCode),
		Tenancy:          string(o.Tenancy),
		UltraServerType:  aws.ToString(o.UltraserverType),
		UltraServerCount: aws.ToInt32(o.UltraserverCount),
	}
}

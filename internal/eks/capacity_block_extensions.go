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

// CapacityBlockExtensionOffering is one way to extend a Capacity Block, as
// DescribeCapacityBlockExtensionOfferings tells it: the block would then run
// from Start to End (the extension's end) for UpfrontFee.
type CapacityBlockExtensionOffering struct {
	ID            string
	DurationHours int32
	// Start is the extension's start (the block's current end); End the
	// block's end once extended.
	Start, End                     time.Time
	UpfrontFee, CurrencyCode       string // EC2's decimal string, e.g. "2500.00", and "USD"
	InstanceCount                  int32
	InstanceType, AvailabilityZone string
	Tenancy                        string
	BlockStart                     time.Time // the block's own start date
}

// CapacityBlockExtensionOfferings lists the offerings to extend the capacity
// block reservationID by durationHours, cheapest first
// (DescribeCapacityBlockExtensionOfferings, all pages). EC2 requires both.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockExtensionOfferings.html
func (c *Client) CapacityBlockExtensionOfferings(ctx context.Context, reservationID string, durationHours int32) ([]CapacityBlockExtensionOffering, error) {
	p := ec2.NewDescribeCapacityBlockExtensionOfferingsPaginator(c.ec2, &ec2.DescribeCapacityBlockExtensionOfferingsInput{
		CapacityReservationId:               aws.String(reservationID),
		CapacityBlockExtensionDurationHours: aws.Int32(durationHours),
	})
	var out []CapacityBlockExtensionOffering
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the offerings to extend capacity block %s by %d hours: %w", reservationID, durationHours, err)
		}
		for _, o := range page.CapacityBlockExtensionOfferings {
			out = append(out, extensionOfferingFromEC2(o))
		}
	}
	slices.SortStableFunc(out, func(a, b CapacityBlockExtensionOffering) int {
		if c := compareFees(a.UpfrontFee, b.UpfrontFee); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func extensionOfferingFromEC2(o ec2types.CapacityBlockExtensionOffering) CapacityBlockExtensionOffering {
	return CapacityBlockExtensionOffering{
		ID:               aws.ToString(o.CapacityBlockExtensionOfferingId),
		DurationHours:    aws.ToInt32(o.CapacityBlockExtensionDurationHours),
		Start:            aws.ToTime(o.CapacityBlockExtensionStartDate),
		End:              aws.ToTime(o.CapacityBlockExtensionEndDate),
		UpfrontFee:       aws.ToString(o.UpfrontFee),
		CurrencyCode:     aws.ToString(o.CurrencyCode),
		InstanceCount:    aws.ToInt32(o.InstanceCount),
		InstanceType:     aws.ToString(o.InstanceType),
		AvailabilityZone: aws.ToString(o.AvailabilityZone),
		Tenancy:          string(o.Tenancy),
		BlockStart:       aws.ToTime(o.StartDate),
	}
}

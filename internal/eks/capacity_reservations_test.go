package eks

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestCapacityReservationFromEC2(t *testing.T) {
	start := time.Date(2026, 11, 27, 11, 30, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	got := capacityReservationFromEC2(ec2types.CapacityReservation{
		CapacityReservationId:  aws.String("cr-0123456789abcdef0"),
		CapacityReservationArn: aws.String("arn:aws:ec2:us-west-2:111122223333:capacity-reservation/cr-0123456789abcdef0"),
		InstanceType:           aws.String("p5.48xlarge"),
		AvailabilityZone:       aws.String("us-west-2a"),
		AvailabilityZoneId:     aws.String("usw2-az1"),
		State:                  ec2types.CapacityReservationStateScheduled,
		ReservationType:        ec2types.CapacityReservationTypeCapacityBlock,
		Tenancy:                ec2types.CapacityReservationTenancyDefault,
		InstanceMatchCriteria:  ec2types.InstanceMatchCriteriaTargeted,
		TotalInstanceCount:     aws.Int32(4),
		AvailableInstanceCount: aws.Int32(3),
		StartDate:              aws.Time(start),
		EndDate:                aws.Time(end),
		EndDateType:            ec2types.EndDateTypeLimited,
		InstancePlatform:       ec2types.CapacityReservationInstancePlatformLinuxUnix,
		OwnerId:                aws.String("111122223333"),
		CapacityBlockId:        aws.String("cb-0123456789abcdef0"),
	})
	want := CapacityReservation{
		ID:                    "cr-0123456789abcdef0",
		ARN:                   "arn:aws:ec2:us-west-2:111122223333:capacity-reservation/cr-0123456789abcdef0",
		InstanceType:          "p5.48xlarge",
		AvailabilityZone:      "us-west-2a",
		State:                 "scheduled",
		ReservationType:       "capacity-block",
		Tenancy:               "default",
		InstanceMatchCriteria: "targeted",
		TotalInstances:        4,
		AvailableInstances:    3,
		Start:                 start,
		End:                   end,
		AvailabilityZoneID:    "usw2-az1",
		EndDateType:           "limited",
		InstancePlatform:      "Linux/UNIX",
		OwnerID:               "111122223333",
		CapacityBlockID:       "cb-0123456789abcdef0",
	}
	if got != want {
		t.Errorf("capacityReservationFromEC2:\n got %+v\nwant %+v", got, want)
	}
	if !got.IsCapacityBlock() {
		t.Error("a capacity-block reservation is not IsCapacityBlock")
	}
}

func TestCapacityReservationFromEC2Defaults(t *testing.T) {
	got := capacityReservationFromEC2(ec2types.CapacityReservation{
		CapacityReservationId: aws.String("cr-1"),
		State:                 ec2types.CapacityReservationStateActive,
		EndDateType:           ec2types.EndDateTypeUnlimited,
	})
	if got.ReservationType != ReservationTypeDefault || got.IsCapacityBlock() {
		t.Errorf("reservation without a reservationType: type %q, IsCapacityBlock %v; want default, false", got.ReservationType, got.IsCapacityBlock())
	}
	if !got.End.IsZero() || !got.Start.IsZero() {
		t.Errorf("reservation without dates: start %v end %v, want zero", got.Start, got.End)
	}
}

func TestCapacityFilterSelects(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC) }
	h100 := Accelerator{Kind: AcceleratorGPU, Manufacturer: "NVIDIA", Name: "H100", Count: 8}
	block := CapacityReservation{ID: "cr-b", TotalInstances: 4, AvailableInstances: 2, Start: day(3), End: day(5), GPU: h100}
	odcr := CapacityReservation{ID: "cr-o", TotalInstances: 1, AvailableInstances: 1, Start: day(1)} // no end, no GPU
	for _, tc := range []struct {
		name     string
		f        CapacityFilter
		r        CapacityReservation
		wantKept bool
	}{
		{"zero filter keeps a non-GPU reservation", CapacityFilter{}, odcr, true},
		{"NVIDIAGPUs drops a non-GPU reservation", CapacityFilter{NVIDIAGPUs: true}, odcr, false},
		{"GPU product matches case-insensitively", CapacityFilter{GPUProducts: []string{"h100"}}, block, true},
		{"GPU product drops another GPU", CapacityFilter{GPUProducts: []string{"A100"}}, block, false},
		{"GPU product drops a non-GPU reservation", CapacityFilter{GPUProducts: []string{"H100"}}, odcr, false},
		{"min total met", CapacityFilter{MinTotalInstances: 4}, block, true},
		{"min total not met", CapacityFilter{MinTotalInstances: 5}, block, false},
		{"min available not met", CapacityFilter{MinAvailableInstances: 3}, block, false},
		{"range overlapping the end", CapacityFilter{From: day(4), To: day(10)}, block, true},
		{"range after the end", CapacityFilter{From: day(5)}, block, false},
		{"range before the start", CapacityFilter{To: day(3)}, block, false},
		{"no end date reaches any range", CapacityFilter{From: day(20), To: day(25)}, odcr, true},
	} {
		if got := tc.f.selects(tc.r); got != tc.wantKept {
			t.Errorf("%s: selects = %v, want %v", tc.name, got, tc.wantKept)
		}
	}
}

func TestExtensionOfferingFromEC2(t *testing.T) {
	start := time.Date(2026, 11, 29, 11, 30, 0, 0, time.UTC)
	got := extensionOfferingFromEC2(ec2types.CapacityBlockExtensionOffering{
		CapacityBlockExtensionOfferingId:    aws.String("cbe-0123456789abcdef0"),
		CapacityBlockExtensionDurationHours: aws.Int32(24),
		CapacityBlockExtensionStartDate:     aws.Time(start),
		CapacityBlockExtensionEndDate:       aws.Time(start.Add(24 * time.Hour)),
		StartDate:                           aws.Time(start.Add(-48 * time.Hour)),
		UpfrontFee:                          aws.String("2400.00"),
		CurrencyCode:                        aws.String("USD"),
		InstanceCount:                       aws.Int32(2),
		InstanceType:                        aws.String("p5.48xlarge"),
		AvailabilityZone:                    aws.String("us-west-2a"),
		Tenancy:                             ec2types.CapacityReservationTenancyDefault,
	})
	want := CapacityBlockExtensionOffering{
		ID: "cbe-0123456789abcdef0", DurationHours: 24, Start: start, End: start.Add(24 * time.Hour),
		UpfrontFee: "2400.00", CurrencyCode: "USD", InstanceCount: 2, InstanceType: "p5.48xlarge",
		AvailabilityZone: "us-west-2a", Tenancy: "default", BlockStart: start.Add(-48 * time.Hour),
	}
	if got != want {
		t.Errorf("extensionOfferingFromEC2:\n got %+v\nwant %+v", got, want)
	}
}

func TestCompareFees(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"900.00", "1000.00", -1}, // by amount, not as text
		{"1000.00", "1000", 0},
		{"12.5", "", -1}, // a missing fee sorts last
		{"", "", 0},
	} {
		if got := compareFees(tc.a, tc.b); got != tc.want {
			t.Errorf("compareFees(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

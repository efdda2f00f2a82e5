package provider

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

var capacityNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func testBlock() eks.CapacityReservation {
	return eks.CapacityReservation{
		ID: "cr-0123456789abcdef0", InstanceType: "p5.48xlarge", AvailabilityZone: "us-west-2b", State: "active",
		ReservationType: eks.ReservationTypeCapacityBlock, TotalInstances: 4, AvailableInstances: 4,
		Start: capacityNow.Add(-time.Hour), End: capacityNow.Add(72 * time.Hour),
	}
}

var testSubnetZones = map[string]string{"subnet-0a1b2c3d4e5f60002": "us-west-2b"}

func TestCheckCapacityReservation(t *testing.T) {
	for _, tc := range []struct {
		description string
		change      func(in *capacityCheckInput)
		wantErrors  []string // substrings, one per error, in order
		wantWarning string   // "" for none
	}{
		{"a block of the group's type in a subnet's zone with room passes", func(*capacityCheckInput) {}, nil, ""},
		{"a block's group with a subnet in another zone is warned", func(in *capacityCheckInput) {
			in.subnetZones = map[string]string{"subnet-0a1b2c3d4e5f60001": "us-west-2a", "subnet-0a1b2c3d4e5f60002": "us-west-2b"}
		}, nil, "subnets subnet-0a1b2c3d4e5f60001 (us-west-2a) are not, and EKS asks a block's group for subnets in the block's zone only: keep subnet-0a1b2c3d4e5f60002"},
		{"an unknown ID says where to look", func(in *capacityCheckInput) { in.found = false }, []string{"InvalidCapacityReservationId.NotFound"}, ""},
		{"an expired block is refused with its dates", func(in *capacityCheckInput) {
			in.res.State, in.res.End = "expired", capacityNow.Add(-time.Hour)
		}, []string{"ended (state expired, starts 2026-11-26T11:00:00Z, ends 2026-11-26T11:00:00Z)"}, ""},
		{"a block whose end passed is ended even before EC2 says so", func(in *capacityCheckInput) { in.res.End = capacityNow.Add(-time.Second) },
			[]string{"Capacity Block cr-0123456789abcdef0 (4 x p5.48xlarge in us-west-2b) ended"}, ""},
		{"a block ending within the scale-down lead is refused", func(in *capacityCheckInput) { in.res.End = capacityNow.Add(30 * time.Minute) },
			[]string{"ends at 2026-11-26T12:30:00Z, in 30m0s: EKS scales a block's node group to zero 40m0s before"}, ""},
		{"a pending reservation is not usable", func(in *capacityCheckInput) { in.res.State = "payment-pending" },
			[]string{"is payment-pending"}, ""},
		{"a scheduled block passes", func(in *capacityCheckInput) {
			in.res.State, in.res.Start = "scheduled", capacityNow.Add(2*time.Hour)
		}, nil, ""},
		{"a block with capacity_type ON_DEMAND says to set CAPACITY_BLOCK", func(in *capacityCheckInput) { in.capacityType = "ON_DEMAND" },
			[]string{`capacity_type = "CAPACITY_BLOCK"`}, ""},
		{"an ODCR with CAPACITY_BLOCK says to set ON_DEMAND", func(in *capacityCheckInput) {
			in.res.ReservationType, in.res.End = eks.ReservationTypeDefault, time.Time{}
		}, []string{`is an On-Demand Capacity Reservation, not a Capacity Block: set capacity_type = "ON_DEMAND"`}, ""},
		{"a reservation of another type is named with the fix", func(in *capacityCheckInput) { in.instanceTypes = []string{"p4d.24xlarge"} },
			[]string{`reserves p5.48xlarge, which is not among instance_types (p4d.24xlarge): instances of other types cannot launch into it. Set instance_types = ["p5.48xlarge"]`}, ""},
		{"a block group with two types is refused", func(in *capacityCheckInput) { in.instanceTypes = []string{"p5.48xlarge", "p5e.48xlarge"} },
			[]string{"one type"}, ""},
		{"a reservation in no subnet's zone is refused", func(in *capacityCheckInput) { in.res.AvailabilityZone = "us-west-2c" },
			[]string{"is in us-west-2c, and no subnet of subnet_ids is (subnet-0a1b2c3d4e5f60002 (us-west-2b)): instances launch into a reservation only in its Availability Zone. Add a subnet in us-west-2c"}, ""},
		{"more than available is refused with the most that fits", func(in *capacityCheckInput) { in.res.AvailableInstances, in.desired = 1, 2 },
			[]string{"desired_size 2 is more than Capacity Block cr-0123456789abcdef0 (4 x p5.48xlarge in us-west-2b) has available: 1 of 4 instances. Lower desired_size to at most 1"}, ""},
		{"what the group already runs counts as available on update", func(in *capacityCheckInput) {
			in.res.AvailableInstances, in.desired, in.held = 0, 3, 2
		}, []string{"0 of 4 instances and the 2 this group already runs in it. Lower desired_size to at most 2"}, ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			in := capacityCheckInput{res: testBlock(), found: true, capacityType: "CAPACITY_BLOCK", instanceTypes: []string{"p5.48xlarge"},
				subnetZones: testSubnetZones, desired: 2, now: capacityNow}
			tc.change(&in)
			var errs []string
			var warning string
			for _, p := range checkCapacityReservation(in) {
				if p.err {
					errs = append(errs, p.detail)
				} else {
					warning += p.detail
				}
			}
			require.Len(t, errs, len(tc.wantErrors), strings.Join(errs, "\n"))
			for i, want := range tc.wantErrors {
				require.Contains(t, errs[i], want)
			}
			if tc.wantWarning == "" {
				require.Empty(t, warning)
			} else {
				require.Contains(t, warning, tc.wantWarning)
			}
		})
	}
}

func TestExpiryWarning(t *testing.T) {
	b := testBlock()
	b.End = capacityNow.Add(5 * time.Hour)
	offers := []eks.CapacityBlockExtensionOffering{{ID: "cbeo-0123456789abcdef0", DurationHours: 24, End: b.End.Add(24 * time.Hour), UpfrontFee: "2352.00", CurrencyCode: "USD"}}
	w := expiryWarning(b, capacityNow, 24*time.Hour, offers, nil)
	require.Contains(t, w, "ends at 2026-11-26T17:00:00Z, in 5h0m0s")
	require.Contains(t, w, "EC2 then reclaims the instances")
	require.Contains(t, w, "cbeo-0123456789abcdef0: 24 hours, to 2026-11-27T17:00:00Z, 2352.00 USD")

	require.Empty(t, expiryWarning(b, capacityNow, 4*time.Hour, offers, nil), "outside the window")
	odcr := b
	odcr.ReservationType = eks.ReservationTypeDefault
	require.Empty(t, expiryWarning(odcr, capacityNow, 24*time.Hour, nil, nil), "only blocks are reclaimed")
	require.Contains(t, expiryWarning(b, capacityNow, 24*time.Hour, nil, errors.New("UnauthorizedOperation")), "could not be read")
	require.Contains(t, expiryWarning(b, capacityNow, 24*time.Hour, nil, nil), "offers no 24-hour extension")
}

func TestValidateCapacity(t *testing.T) {
	block := []nodeGroupCapacityModel{{ID: types.StringValue("cr-0123456789abcdef0")}}
	for _, tc := range []struct {
		description  string
		capacityType types.String
		capacity     []nodeGroupCapacityModel
		wantError    string
	}{
		{"CAPACITY_BLOCK without a reservation says what to add", types.StringValue("CAPACITY_BLOCK"), nil, `add capacity_reservation { id = "cr-..." }`},
		{"SPOT with a reservation is refused", types.StringValue("SPOT"), block, `capacity_type "SPOT" cannot launch into a capacity reservation`},
		{"CAPACITY_BLOCK with a reservation passes", types.StringValue("CAPACITY_BLOCK"), block, ""},
		{"the default with a reservation passes (an ODCR)", types.StringNull(), block, ""},
		{"ON_DEMAND without a reservation passes", types.StringValue("ON_DEMAND"), nil, ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			m := nodeGroupModel{CapacityType: tc.capacityType, CapacityReservation: tc.capacity}
			diags := m.validateCapacity()
			if tc.wantError == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Contains(t, errorDetails(diags), tc.wantError)
		})
	}
}

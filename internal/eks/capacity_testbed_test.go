package eks

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
)

func TestCapacityReservationsReadsSeededBlockAndReservation(t *testing.T) {
	c := testbedClient(t)
	ctx := context.Background()
	zone := emu.Region() + "a"
	start := time.Now().UTC().Truncate(time.Second).Add(2 * time.Hour)
	end := start.Add(24 * time.Hour)
	block, err := emu.AddCapacityReservation(awsemu.CapacityReservationSeed{
		InstanceType: "p5.48xlarge", AvailabilityZone: zone, Count: 4, Block: true, Start: start, End: end,
	})
	if err != nil {
		t.Fatal(err)
	}
	odcr, err := emu.AddCapacityReservation(awsemu.CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: emu.Region() + "b", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = emu.EndCapacityReservation(block)
		_ = emu.EndCapacityReservation(odcr)
	})

	r, found, err := c.CapacityReservation(ctx, block)
	if err != nil || !found {
		t.Fatalf("CapacityReservation(%s) = found %v, %v", block, found, err)
	}
	if !r.IsCapacityBlock() || r.State != "scheduled" || r.InstanceType != "p5.48xlarge" || r.AvailabilityZone != zone ||
		r.TotalInstances != 4 || !r.Start.Equal(start) || !r.End.Equal(end) || r.InstanceMatchCriteria != "targeted" || r.GPU.Name != "H100" {
		t.Errorf("the seeded block reads back as %+v", r)
	}

	_, found, err = c.CapacityReservation(ctx, "cr-0000000000000000f")
	if err != nil || found {
		t.Errorf("an unknown reservation: found %v, %v; want not found, no error", found, err)
	}

	h100, err := c.CapacityReservations(ctx, CapacityFilter{GPUProducts: []string{"h100"}, AvailabilityZones: []string{zone}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(h100))
	for i, r := range h100 {
		ids[i] = r.ID
	}
	if !slices.Contains(ids, block) || slices.Contains(ids, odcr) {
		t.Errorf("H100 reservations in %s are %v; want %s and not the A100 one %s", zone, ids, block, odcr)
	}
	detailed, err := c.CapacityReservations(ctx, CapacityFilter{IDs: []string{block, odcr}, BlockDetails: true, Topology: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range detailed {
		switch r.ID {
		case block:
			if r.Block == nil || r.Block.ID != r.CapacityBlockID || !slices.Contains(r.Block.ReservationIDs, block) || r.Block.InterconnectStatus != "ok" {
				t.Errorf("the block's facts: %+v", r.Block)
			}
			if r.Topology != nil {
				t.Errorf("the scheduled block has topology %+v; EC2 gives it for pending or active reservations", r.Topology)
			}
		case odcr:
			if r.Block != nil {
				t.Errorf("an On-Demand reservation has block facts %+v", r.Block)
			}
			if r.Topology == nil || len(r.Topology.NetworkNodes) != 3 {
				t.Errorf("the active p4d reservation's topology: %+v; want three network nodes", r.Topology)
			}
		}
	}
	later, err := c.CapacityReservations(ctx, CapacityFilter{IDs: []string{block, odcr}, From: end.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0].ID != odcr {
		t.Errorf("reservations running after the block ends: %+v; want only the one without an end date, %s", later, odcr)
	}
}

func TestCapacityBlockOfferingsAskEachNVIDIAType(t *testing.T) {
	c := testbedClient(t)
	ctx := context.Background()
	from := time.Now().Add(24 * time.Hour)
	offers, err := c.CapacityBlockOfferings(ctx, OfferingFilter{
		GPUProducts: []string{"H100", "A100"}, InstanceCount: 4, DurationHours: 72, From: from,
	})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for i, o := range offers {
		types[o.InstanceType] = true
		if o.InstanceCount != 4 || o.DurationHours != 72 || !o.End.Equal(o.Start.Add(72*time.Hour)) || o.Start.Before(from.Add(-time.Second)) {
			t.Errorf("offering %+v is not 4 instances for 72 hours from %v", o, from)
		}
		if o.GPU.Name != "H100" && o.GPU.Name != "A100" {
			t.Errorf("offering %s of %s has GPU %q", o.ID, o.InstanceType, o.GPU.Name)
		}
		if i > 0 && CompareOfferingsByStart(offers[i-1], o) > 0 {
			t.Errorf("offerings out of start order at %d: %v after %v", i, o.Start, offers[i-1].Start)
		}
	}
	if !types["p5.48xlarge"] || !types["p4d.24xlarge"] {
		t.Errorf("offerings of %v; want p5.48xlarge (H100) and p4d.24xlarge (A100)", types)
	}

	_, err = c.CapacityBlockOfferings(ctx, OfferingFilter{InstanceTypes: []string{"p5.48xlarge"}, InstanceCount: 4, DurationHours: 36})
	if err == nil {
		t.Error("a 36-hour block: no error; EC2 sells whole days")
	}
}

package awsemu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// CapacityReservationSeed is an EC2 capacity reservation a test (or
// Options.CapacityReservations) puts in the account: an On-Demand Capacity
// Reservation, or a Capacity Block for ML when Block is set. The emulator
// does not sell capacity (PurchaseCapacityBlock and CreateCapacityReservation
// are not emulated): reservations exist because a seed says so.
type CapacityReservationSeed struct {
	InstanceType     string `json:"instanceType"`     // e.g. "p5.48xlarge"
	AvailabilityZone string `json:"availabilityZone"` // e.g. emu.Region()+"a"
	Count            int    `json:"count"`            // total instances
	// Block makes an EC2 Capacity Block for ML (reservationType
	// "capacity-block", its own capacityBlockId).
	Block bool `json:"block"`
	// Start and End are on the wall clock; zero Start is now, zero End is
	// no end date (On-Demand Capacity Reservations only: a block has one).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// InstanceMatchCriteria is "open" or "targeted"; "" is "targeted" for
	// blocks (the only criteria EC2 gives them) and "open" otherwise.
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
}

// capacityReservation is one reservation the account holds; its state
// follows the wall clock (reservationState).
type capacityReservation struct {
	id, blockID         string // blockID ("cb-...") only for blocks
	instanceType, zone  string
	total               int
	block               bool
	start, end, created time.Time // end zero: no end date
	matchCriteria       string
	// ended is set by EndCapacityReservation (end moved to that moment).
	ended bool
}

// Reservation states EC2 reports (CapacityReservationState).
const (
	reservationScheduled = "scheduled"
	reservationActive    = "active"
	reservationExpired   = "expired"
)

// stateAt is the reservation's state at now: scheduled before its start,
// expired from its end on ("The Capacity Reservation's state changes to
// expired when it reaches its end date and time": DescribeCapacityReservations'
// filter end-date, EC2 API reference), active between.
func (r *capacityReservation) stateAt(now time.Time) string {
	switch {
	case !r.end.IsZero() && !now.Before(r.end):
		return reservationExpired
	case now.Before(r.start):
		return reservationScheduled
	default:
		return reservationActive
	}
}

// used counts the group instances that run in the reservation. e.mu is
// held.
func (s *state) reservationUsed(id string) int {
	n := 0
	for _, ng := range s.nodegroups {
		for _, node := range ng.nodes {
			if node.reservation == id {
				n++
			}
		}
	}
	return n
}

// availableAt is availableInstanceCount: what is not used, and nothing
// once the reservation has expired (its capacity is released).
func (s *state) reservationAvailable(r *capacityReservation, now time.Time) int {
	if r.stateAt(now) == reservationExpired {
		return 0
	}
	return max(r.total-s.reservationUsed(r.id), 0)
}

// resourceID is an EC2 resource ID: prefix, "-", 17 hex digits.
func resourceID(prefix string, parts ...any) string {
	h := sha256.Sum256(fmt.Append(nil, append([]any{prefix}, parts...)...))
	return prefix + "-0" + hex.EncodeToString(h[:])[:16]
}

// addReservation validates a seed and adds its reservation. e.mu is held.
func (e *Emulator) addReservation(seed CapacityReservationSeed, now time.Time) (*capacityReservation, error) {
	if _, ok := ec2catalog.Lookup(seed.InstanceType); !ok {
		return nil, fmt.Errorf("adding a capacity reservation: instance type %q is not in the catalog", seed.InstanceType)
	}
	if !offered(seed.InstanceType, seed.AvailabilityZone) || seed.AvailabilityZone[:len(seed.AvailabilityZone)-1] != e.st.region {
		return nil, fmt.Errorf("adding a capacity reservation: %s is not offered in availability zone %q of %s", seed.InstanceType, seed.AvailabilityZone, e.st.region)
	}
	if seed.Count < 1 {
		return nil, fmt.Errorf("adding a capacity reservation of %s: count %d is not positive", seed.InstanceType, seed.Count)
	}
	start := seed.Start
	if start.IsZero() {
		start = now
	}
	if seed.Block && seed.End.IsZero() {
		return nil, fmt.Errorf("adding a capacity block of %s: a block needs an end", seed.InstanceType)
	}
	if !seed.End.IsZero() && !seed.End.After(start) {
		return nil, fmt.Errorf("adding a capacity reservation of %s: end %s is not after start %s", seed.InstanceType, seed.End.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	criteria := seed.InstanceMatchCriteria
	switch {
	case criteria == "" && seed.Block:
		criteria = "targeted"
	case criteria == "":
		criteria = "open"
	case criteria != "open" && criteria != "targeted":
		return nil, fmt.Errorf("adding a capacity reservation of %s: instance match criteria %q is neither open nor targeted", seed.InstanceType, criteria)
	case seed.Block && criteria != "targeted":
		return nil, fmt.Errorf("adding a capacity block of %s: blocks are targeted, not %s", seed.InstanceType, criteria)
	}
	e.st.reservationSeq++
	r := &capacityReservation{
		id:            resourceID("cr", e.st.region, e.st.reservationSeq, now.UnixNano()),
		instanceType:  seed.InstanceType,
		zone:          seed.AvailabilityZone,
		total:         seed.Count,
		block:         seed.Block,
		start:         start.UTC().Truncate(time.Millisecond),
		end:           seed.End.UTC().Truncate(time.Millisecond),
		created:       now.UTC().Truncate(time.Second),
		matchCriteria: criteria,
	}
	if r.block {
		r.blockID = resourceID("cb", e.st.region, e.st.reservationSeq, now.UnixNano())
	}
	e.st.reservations = append(e.st.reservations, r)
	return r, nil
}

// reservation finds a reservation by ID. e.mu is held.
func (s *state) reservation(id string) *capacityReservation {
	i := slices.IndexFunc(s.reservations, func(r *capacityReservation) bool { return r.id == id })
	if i < 0 {
		return nil
	}
	return s.reservations[i]
}

// zoneID is the AZ ID of one of the region's AZs ("usw2-az1").
func zoneID(zone string) string {
	for _, s := range testSubnets {
		if len(zone) > 0 && zone[len(zone)-1:] == s.zoneSuffix {
			return s.zoneID
		}
	}
	return ""
}

// ec2Time is a timestamp as EC2's XML carries it.
func ec2Time(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// reservationIDMalformed reports an ID that is not "cr-" and 8 or 17 hex
// digits, as EC2 answers InvalidCapacityReservationId.Malformed for.
func reservationIDMalformed(id string) bool {
	return !wellFormedID(id, "cr-")
}

// wellFormedID is prefix and 8 or 17 lower-case hex digits, the two forms
// EC2 resource IDs take.
func wellFormedID(id, prefix string) bool {
	if len(id) <= len(prefix) || id[:len(prefix)] != prefix {
		return false
	}
	digits := id[len(prefix):]
	if len(digits) != 8 && len(digits) != 17 {
		return false
	}
	for _, c := range digits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// The unknown and malformed reservation ID errors (codes from the EC2 API
// reference's error code list; the message wording is the emulator's).
func errReservationNotFound(id string) *apiError {
	return newError(http.StatusBadRequest, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
}

func errReservationMalformed(id string) *apiError {
	return newError(http.StatusBadRequest, "InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\" (expecting \"cr-...\")", id)
}

// capacityChanged tops up every ACTIVE group to its desired size once
// capacity came or went (a reservation started or ended, on-demand
// capacity returned): what a group's Auto Scaling group does on its next
// launch attempt. e.mu is held.
func (e *Emulator) capacityChanged() {
	for key, ng := range e.st.nodegroups {
		if ng.doc.Status == statusActive && ng.pending == nil {
			e.scaleTo(key, ng, int(*ng.doc.ScalingConfig.DesiredSize))
		}
	}
}

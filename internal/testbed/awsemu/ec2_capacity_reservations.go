package awsemu

import (
	"net/url"
	"slices"
	"time"
)

type capacityAllocation struct {
	AllocationType string `xml:"allocationType"`
	Count          int    `xml:"count"`
}

// capacityReservationDoc is EC2's CapacityReservation, with its XML member
// names.
type capacityReservationDoc struct {
	CapacityReservationID  string               `xml:"capacityReservationId"`
	OwnerID                string               `xml:"ownerId"`
	CapacityReservationArn string               `xml:"capacityReservationArn"`
	AvailabilityZoneID     string               `xml:"availabilityZoneId"`
	InstanceType           string               `xml:"instanceType"`
	InstancePlatform       string               `xml:"instancePlatform"`
	AvailabilityZone       string               `xml:"availabilityZone"`
	Tenancy                string               `xml:"tenancy"`
	TotalInstanceCount     int                  `xml:"totalInstanceCount"`
	AvailableInstanceCount int                  `xml:"availableInstanceCount"`
	EbsOptimized           bool                 `xml:"ebsOptimized"`
	EphemeralStorage       bool                 `xml:"ephemeralStorage"`
	State                  string               `xml:"state"`
	StartDate              string               `xml:"startDate"`
	EndDate                string               `xml:"endDate,omitempty"`
	EndDateType            string               `xml:"endDateType"`
	InstanceMatchCriteria  string               `xml:"instanceMatchCriteria"`
	CreateDate             string               `xml:"createDate"`
	TagSet                 []ec2Tag             `xml:"tagSet>item"`
	CapacityAllocations    []capacityAllocation `xml:"capacityAllocationSet>item"`
	ReservationType        string               `xml:"reservationType"`
	DeliveryPreference     string               `xml:"deliveryPreference"`
	CapacityBlockID        string               `xml:"capacityBlockId,omitempty"`
}

// The values the emulator's reservations all share: Linux, shared tenancy.
const (
	reservationPlatform = "Linux/UNIX"
	reservationTenancy  = "default"
)

// doc renders the reservation at now. e.mu is held.
func (s *state) reservationDoc(r *capacityReservation, now time.Time) capacityReservationDoc {
	d := capacityReservationDoc{
		CapacityReservationID:  r.id,
		OwnerID:                AccountID,
		CapacityReservationArn: "arn:aws:ec2:" + s.region + ":" + AccountID + ":capacity-reservation/" + r.id,
		AvailabilityZoneID:     zoneID(r.zone),
		InstanceType:           r.instanceType,
		InstancePlatform:       reservationPlatform,
		AvailabilityZone:       r.zone,
		Tenancy:                reservationTenancy,
		TotalInstanceCount:     r.total,
		AvailableInstanceCount: s.reservationAvailable(r, now),
		EbsOptimized:           true,
		State:                  r.stateAt(now),
		StartDate:              ec2Time(r.start),
		EndDateType:            "unlimited",
		InstanceMatchCriteria:  r.matchCriteria,
		CreateDate:             ec2Time(r.created),
		ReservationType:        "default",
		DeliveryPreference:     "fixed",
		CapacityBlockID:        r.blockID,
	}
	if !r.end.IsZero() {
		d.EndDate = ec2Time(r.end)
		d.EndDateType = "limited"
	}
	if r.block {
		d.ReservationType = "capacity-block"
	}
	if used := s.reservationUsed(r.id); used > 0 {
		d.CapacityAllocations = []capacityAllocation{{AllocationType: "used", Count: used}}
	}
	return d
}

type describeCapacityReservationsResult struct {
	RequestID            string                   `xml:"requestId"`
	CapacityReservations []capacityReservationDoc `xml:"capacityReservationSet>item"`
	NextToken            string                   `xml:"nextToken,omitempty"`
}

// describeCapacityReservations: CapacityReservationId.N (each well formed,
// InvalidCapacityReservationId.Malformed, and known,
// InvalidCapacityReservationId.NotFound); the filters the API reference
// lists (instance-type, owner-id, instance-platform, availability-zone,
// tenancy, outpost-arn, state, start-date, end-date, end-date-type,
// instance-match-criteria, placement-group-arn); MaxResults 1..1000 with
// NextToken.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html
func (e *Emulator) describeCapacityReservations(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 1000)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	var docs []capacityReservationDoc
	ids := queryList(form, "CapacityReservationId")
	for _, id := range ids {
		if reservationIDMalformed(id) {
			return nil, errReservationMalformed(id)
		}
		if e.st.reservation(id) == nil {
			return nil, errReservationNotFound(id)
		}
	}
	for _, r := range e.st.reservations {
		if len(ids) == 0 || slices.Contains(ids, r.id) {
			docs = append(docs, e.st.reservationDoc(r, now))
		}
	}
	for _, f := range queryFilters(form, true) {
		field, ok := reservationFilterFields[f.name]
		if !ok {
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d capacityReservationDoc) bool { return !matchesAny(f.values, field(d)) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeCapacityReservationsResult{RequestID: nextRequestID(), CapacityReservations: pageDocs, NextToken: next}, nil
}

// reservationFilterFields are DescribeCapacityReservations' filters, by
// name, and the member each matches. The API reference lists no
// reservation-type filter, so EC2's answer to one is the emulator's:
// the filter is invalid.
var reservationFilterFields = map[string]func(capacityReservationDoc) string{
	"instance-type":           func(d capacityReservationDoc) string { return d.InstanceType },
	"owner-id":                func(d capacityReservationDoc) string { return d.OwnerID },
	"instance-platform":       func(d capacityReservationDoc) string { return d.InstancePlatform },
	"availability-zone":       func(d capacityReservationDoc) string { return d.AvailabilityZone },
	"tenancy":                 func(d capacityReservationDoc) string { return d.Tenancy },
	"outpost-arn":             func(capacityReservationDoc) string { return "" },
	"state":                   func(d capacityReservationDoc) string { return d.State },
	"start-date":              func(d capacityReservationDoc) string { return d.StartDate },
	"end-date":                func(d capacityReservationDoc) string { return d.EndDate },
	"end-date-type":           func(d capacityReservationDoc) string { return d.EndDateType },
	"instance-match-criteria": func(d capacityReservationDoc) string { return d.InstanceMatchCriteria },
	"placement-group-arn":     func(capacityReservationDoc) string { return "" },
}

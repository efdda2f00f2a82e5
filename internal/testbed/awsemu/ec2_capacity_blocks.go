package awsemu

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// capacityBlockDoc is EC2's CapacityBlock. Each emulated block holds one
// reservation (UltraServer blocks, which hold several, are not emulated).
type capacityBlockDoc struct {
	CapacityBlockID        string   `xml:"capacityBlockId"`
	AvailabilityZone       string   `xml:"availabilityZone"`
	AvailabilityZoneID     string   `xml:"availabilityZoneId"`
	CapacityReservationIDs []string `xml:"capacityReservationIdSet>item"`
	StartDate              string   `xml:"startDate"`
	EndDate                string   `xml:"endDate"`
	CreateDate             string   `xml:"createDate"`
	State                  string   `xml:"state"`
	TagSet                 []ec2Tag `xml:"tagSet>item"`
}

type describeCapacityBlocksResult struct {
	RequestID      string             `xml:"requestId"`
	CapacityBlocks []capacityBlockDoc `xml:"capacityBlockSet>item"`
	NextToken      string             `xml:"nextToken,omitempty"`
}

// blocksAsked are the account's blocks, narrowed to CapacityBlockId.N
// when given. The EC2 error code list has no code for an unknown block
// ID, so one is not an error here: it matches nothing. e.mu is held.
func (s *state) blocksAsked(form url.Values) []*capacityReservation {
	ids := queryList(form, "CapacityBlockId")
	var out []*capacityReservation
	for _, r := range s.reservations {
		if r.block && (len(ids) == 0 || slices.Contains(ids, r.blockID)) {
			out = append(out, r)
		}
	}
	return out
}

// describeCapacityBlocks: CapacityBlockId.N; filters capacity-block-id,
// ultraserver-type, availability-zone, start-date, end-date, create-date,
// state (and tags, which no emulated block has); MaxResults 1..1000.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlocks.html
func (e *Emulator) describeCapacityBlocks(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 1000)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	e.mu.Lock()
	var docs []capacityBlockDoc
	for _, r := range e.st.blocksAsked(form) {
		docs = append(docs, capacityBlockDoc{
			CapacityBlockID:        r.blockID,
			AvailabilityZone:       r.zone,
			AvailabilityZoneID:     zoneID(r.zone),
			CapacityReservationIDs: []string{r.id},
			StartDate:              ec2Time(r.start),
			EndDate:                ec2Time(r.end),
			CreateDate:             ec2Time(r.created),
			State:                  r.stateAt(now),
		})
	}
	e.mu.Unlock()
	for _, f := range queryFilters(form, true) {
		var field func(capacityBlockDoc) string
		switch f.name {
		case "capacity-block-id":
			field = func(d capacityBlockDoc) string { return d.CapacityBlockID }
		case "ultraserver-type":
			// Every emulated block is of instances.
			field = func(capacityBlockDoc) string { return "instances" }
		case "availability-zone":
			field = func(d capacityBlockDoc) string { return d.AvailabilityZone }
		case "start-date":
			field = func(d capacityBlockDoc) string { return d.StartDate }
		case "end-date":
			field = func(d capacityBlockDoc) string { return d.EndDate }
		case "create-date":
			field = func(d capacityBlockDoc) string { return d.CreateDate }
		case "state":
			field = func(d capacityBlockDoc) string { return d.State }
		case "tags":
			field = func(capacityBlockDoc) string { return "" }
		default:
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d capacityBlockDoc) bool { return !matchesAny(f.values, field(d)) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeCapacityBlocksResult{RequestID: nextRequestID(), CapacityBlocks: pageDocs, NextToken: next}, nil
}

type capacityReservationStatusDoc struct {
	CapacityReservationID    string `xml:"capacityReservationId"`
	TotalCapacity            int    `xml:"totalCapacity"`
	TotalAvailableCapacity   int    `xml:"totalAvailableCapacity"`
	TotalUnavailableCapacity int    `xml:"totalUnavailableCapacity"`
}

type capacityBlockStatusDoc struct {
	CapacityBlockID             string                         `xml:"capacityBlockId"`
	InterconnectStatus          string                         `xml:"interconnectStatus"`
	TotalCapacity               int                            `xml:"totalCapacity"`
	TotalAvailableCapacity      int                            `xml:"totalAvailableCapacity"`
	TotalUnavailableCapacity    int                            `xml:"totalUnavailableCapacity"`
	CapacityReservationStatuses []capacityReservationStatusDoc `xml:"capacityReservationStatusSet>item"`
}

type describeCapacityBlockStatusResult struct {
	RequestID string                   `xml:"requestId"`
	Statuses  []capacityBlockStatusDoc `xml:"capacityBlockStatusSet>item"`
	NextToken string                   `xml:"nextToken,omitempty"`
}

// describeCapacityBlockStatus: CapacityBlockId.N; filter
// interconnect-status; MaxResults 1..1000. The emulated interconnect is
// always "ok" and no capacity fails its status checks (unavailable 0):
// available is what can still be launched.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockStatus.html
func (e *Emulator) describeCapacityBlockStatus(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 1000)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	e.mu.Lock()
	var docs []capacityBlockStatusDoc
	for _, r := range e.st.blocksAsked(form) {
		available := e.st.reservationAvailable(r, now)
		docs = append(docs, capacityBlockStatusDoc{
			CapacityBlockID:        r.blockID,
			InterconnectStatus:     "ok",
			TotalCapacity:          r.total,
			TotalAvailableCapacity: available,
			CapacityReservationStatuses: []capacityReservationStatusDoc{
				{CapacityReservationID: r.id, TotalCapacity: r.total, TotalAvailableCapacity: available},
			},
		})
	}
	e.mu.Unlock()
	for _, f := range queryFilters(form, true) {
		if f.name != "interconnect-status" {
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d capacityBlockStatusDoc) bool { return !matchesAny(f.values, d.InterconnectStatus) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeCapacityBlockStatusResult{RequestID: nextRequestID(), Statuses: pageDocs, NextToken: next}, nil
}

type capacityBlockExtensionOffering struct {
	OfferingID         string `xml:"capacityBlockExtensionOfferingId"`
	InstanceType       string `xml:"instanceType"`
	InstanceCount      int    `xml:"instanceCount"`
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	StartDate          string `xml:"startDate"`
	ExtensionStartDate string `xml:"capacityBlockExtensionStartDate"`
	ExtensionEndDate   string `xml:"capacityBlockExtensionEndDate"`
	ExtensionHours     int    `xml:"capacityBlockExtensionDurationHours"`
	UpfrontFee         string `xml:"upfrontFee"`
	CurrencyCode       string `xml:"currencyCode"`
	Tenancy            string `xml:"tenancy"`
	ZoneType           string `xml:"zoneType"`
}

type describeExtensionOfferingsResult struct {
	RequestID string                           `xml:"requestId"`
	Offerings []capacityBlockExtensionOffering `xml:"capacityBlockExtensionOfferingSet>item"`
	NextToken string                           `xml:"nextToken,omitempty"`
}

// Extension rules from "Extend Capacity Blocks"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-extend.html):
// the block is active or scheduled; the request comes between 56 days and
// 1 hour before the block's end; the extension is in 1-day increments up
// to 14 days and 7-day increments up to 182 days in total.
const (
	extensionEarliest = 56 * 24 * time.Hour
	extensionLatest   = time.Hour
	maxBlockHours     = 182 * 24
)

// describeCapacityBlockExtensionOfferings: CapacityReservationId and
// CapacityBlockExtensionDurationHours (both required). A block that can be
// extended gets one synthetic offering that starts at its end, priced as
// DescribeCapacityBlockOfferings prices a block starting then; a block
// that cannot (expired, outside the window, too long in total) and an
// On-Demand Capacity Reservation get none.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockExtensionOfferings.html
func (e *Emulator) describeCapacityBlockExtensionOfferings(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 1000)
	if err != nil {
		return nil, err
	}
	hours, ok, err := intParam(form, "CapacityBlockExtensionDurationHours")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissingParameter("CapacityBlockExtensionDurationHours")
	}
	if !validBlockHours(hours) {
		return nil, newError(http.StatusBadRequest, "InvalidParameterValue",
			"Value (%d) for parameter CapacityBlockExtensionDurationHours is invalid. Specify the duration in 1-day increments up to 14 days, and in 7-day increments up to 182 days.", hours)
	}
	id := form.Get("CapacityReservationId")
	if id == "" {
		return nil, errMissingParameter("CapacityReservationId")
	}
	if reservationIDMalformed(id) {
		return nil, errReservationMalformed(id)
	}
	now := time.Now()
	e.mu.Lock()
	r := e.st.reservation(id)
	var snapshot capacityReservation
	if r != nil {
		snapshot = *r
	}
	e.mu.Unlock()
	if r == nil {
		return nil, errReservationNotFound(id)
	}
	result := describeExtensionOfferingsResult{RequestID: nextRequestID()}
	r = &snapshot
	state := r.stateAt(now)
	untilEnd := r.end.Sub(now)
	total := r.end.Sub(r.start) + time.Duration(hours)*time.Hour
	if !r.block || (state != reservationActive && state != reservationScheduled) ||
		untilEnd < extensionLatest || untilEnd > extensionEarliest || total > maxBlockHours*time.Hour {
		return result, nil
	}
	t, _ := ec2catalog.Lookup(r.instanceType)
	zoneIndex := slices.Index(zones(e.opts.Region), r.zone)
	daysAhead := int(r.end.Sub(nextBlockBoundary(now)).Hours() / 24)
	end := r.end.Add(time.Duration(hours) * time.Hour)
	result.Offerings = []capacityBlockExtensionOffering{{
		OfferingID:         resourceID("cbe", r.id, r.end.Unix(), hours),
		InstanceType:       r.instanceType,
		InstanceCount:      r.total,
		AvailabilityZone:   r.zone,
		AvailabilityZoneID: zoneID(r.zone),
		StartDate:          ec2Time(r.start),
		ExtensionStartDate: ec2Time(r.end),
		ExtensionEndDate:   ec2Time(end),
		ExtensionHours:     hours,
		UpfrontFee:         upfrontFee(blockHourlyUSD(t, zoneIndex, max(daysAhead, 0)), hours, r.total),
		CurrencyCode:       "USD",
		Tenancy:            reservationTenancy,
		ZoneType:           "availability-zone",
	}}
	pageOfferings, next, ok := page(result.Offerings, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	result.Offerings, result.NextToken = pageOfferings, next
	return result, nil
}

type capacityReservationTopologyDoc struct {
	CapacityReservationID string   `xml:"capacityReservationId"`
	State                 string   `xml:"state"`
	InstanceType          string   `xml:"instanceType"`
	NetworkNodes          []string `xml:"networkNodeSet>item"`
	AvailabilityZoneID    string   `xml:"availabilityZoneId"`
	AvailabilityZone      string   `xml:"availabilityZone"`
}

type describeTopologyResult struct {
	RequestID    string                           `xml:"requestId"`
	Reservations []capacityReservationTopologyDoc `xml:"capacityReservationSet>item"`
	NextToken    string                           `xml:"nextToken,omitempty"`
}

// topologyTypes are the catalog's instance types EC2 describes the
// topology of, three network nodes deep ("Prerequisites for Amazon EC2
// topology",
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html).
var topologyTypes = []string{
	"g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
	"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
	"trn1.2xlarge", "trn1.32xlarge",
}

// networkNodes are a reservation's three network nodes, top first: the
// first is shared by the zone, the second by the zone's reservations of
// one family, the third is the reservation's own. IDs are hashed, as
// EC2's are per account.
func networkNodes(r *capacityReservation) []string {
	family, _, _ := strings.Cut(r.instanceType, ".")
	return []string{
		resourceID("nn", AccountID, r.zone),
		resourceID("nn", AccountID, r.zone, family),
		resourceID("nn", AccountID, r.id),
	}
}

// describeCapacityReservationTopology: CapacityReservationId.N (at most
// 100, not with MaxResults), filters availability-zone and instance-type,
// MaxResults 1..10 (default 10). A reservation of a type without topology,
// or not active (or pending), has no network nodes.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservationTopology.html
func (e *Emulator) describeCapacityReservationTopology(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 10)
	if err != nil {
		return nil, err
	}
	ids := queryList(form, "CapacityReservationId")
	if len(ids) > 0 && maxResults > 0 {
		return nil, newError(http.StatusBadRequest, "InvalidParameterCombination", "You can't specify MaxResults and CapacityReservationIds in the same request.")
	}
	if len(ids) > 100 {
		return nil, newError(http.StatusBadRequest, "InvalidParameterValue", "You can specify at most 100 Capacity Reservation IDs.")
	}
	if maxResults == 0 && len(ids) == 0 {
		maxResults = 10
	}
	now := time.Now()
	e.mu.Lock()
	var docs []capacityReservationTopologyDoc
	for _, id := range ids {
		if reservationIDMalformed(id) {
			e.mu.Unlock()
			return nil, errReservationMalformed(id)
		}
		if e.st.reservation(id) == nil {
			e.mu.Unlock()
			return nil, errReservationNotFound(id)
		}
	}
	for _, r := range e.st.reservations {
		if len(ids) > 0 && !slices.Contains(ids, r.id) {
			continue
		}
		d := capacityReservationTopologyDoc{
			CapacityReservationID: r.id,
			State:                 r.stateAt(now),
			InstanceType:          r.instanceType,
			AvailabilityZoneID:    zoneID(r.zone),
			AvailabilityZone:      r.zone,
		}
		if d.State == reservationActive && slices.Contains(topologyTypes, r.instanceType) {
			d.NetworkNodes = networkNodes(r)
		}
		docs = append(docs, d)
	}
	e.mu.Unlock()
	for _, f := range queryFilters(form, true) {
		var field func(capacityReservationTopologyDoc) string
		switch f.name {
		case "availability-zone":
			field = func(d capacityReservationTopologyDoc) string { return d.AvailabilityZone }
		case "instance-type":
			field = func(d capacityReservationTopologyDoc) string { return d.InstanceType }
		default:
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d capacityReservationTopologyDoc) bool { return !matchesAny(f.values, field(d)) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeTopologyResult{RequestID: nextRequestID(), Reservations: pageDocs, NextToken: next}, nil
}

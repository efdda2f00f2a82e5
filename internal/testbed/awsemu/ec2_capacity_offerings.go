package awsemu

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// capacityBlockFamilies are the families the emulator sells Capacity
// Blocks of (supportedUsageClasses "capacity-block").
var capacityBlockFamilies = []string{"p4d", "p4de", "p5", "p5e", "p5en", "trn1"}

// sellsCapacityBlocks reports whether Capacity Blocks of a type exist.
func sellsCapacityBlocks(instanceType string) bool {
	family, _, _ := strings.Cut(instanceType, ".")
	return slices.Contains(capacityBlockFamilies, family)
}

// Capacity Block facts from "Find and purchase Capacity Blocks"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html):
// durations in 1-day increments up to 14 days and 7-day increments up to
// 182 days, up to 64 instances a block, up to 6 offerings an answer, and
// every block ends at 11:30 UTC.
const (
	maxBlockInstances     = 64
	maxBlockOfferings     = 6
	blockBoundaryMinutes  = 11*60 + 30
	offeringDays          = 3  // start days an answer spreads its offerings over
	offeringSearchDays    = 56 // how far ahead the emulator looks for them
	offeringZonesPerStart = 2
)

// validBlockHours reports whether EC2 sells a block of that many hours.
func validBlockHours(hours int) bool {
	if hours <= 0 || hours%24 != 0 {
		return false
	}
	days := hours / 24
	return days <= 14 || (days%7 == 0 && days <= 182)
}

// nextBlockBoundary is the first 11:30 UTC at or after t.
func nextBlockBoundary(t time.Time) time.Time {
	t = t.UTC()
	b := time.Date(t.Year(), t.Month(), t.Day(), 0, blockBoundaryMinutes, 0, 0, time.UTC)
	if b.Before(t) {
		b = b.AddDate(0, 0, 1)
	}
	return b
}

// blockHourlyUSD is the synthetic price of one instance-hour in a block:
// the synthetic spot price (ec2.go) times 1.5, 1% more for each day ahead
// the block starts. Real prices are not reproduced.
func blockHourlyUSD(t ec2catalog.InstanceType, zoneIndex, daysAhead int) float64 {
	return syntheticSpotPrice(t, zoneIndex) * 1.5 * (1 + 0.01*float64(daysAhead))
}

// upfrontFee is a fee as EC2 writes it: a decimal string, in USD.
func upfrontFee(hourly float64, hours, count int) string {
	return fmt.Sprintf("%.2f", math.Round(hourly*float64(hours)*float64(count)*100)/100)
}

type capacityBlockOffering struct {
	CapacityBlockOfferingID      string `xml:"capacityBlockOfferingId"`
	InstanceType                 string `xml:"instanceType"`
	AvailabilityZone             string `xml:"availabilityZone"`
	InstanceCount                int    `xml:"instanceCount"`
	StartDate                    string `xml:"startDate"`
	EndDate                      string `xml:"endDate"`
	CapacityBlockDurationHours   int    `xml:"capacityBlockDurationHours"`
	UpfrontFee                   string `xml:"upfrontFee"`
	CurrencyCode                 string `xml:"currencyCode"`
	Tenancy                      string `xml:"tenancy"`
	CapacityBlockDurationMinutes int    `xml:"capacityBlockDurationMinutes"`
}

type describeCapacityBlockOfferingsResult struct {
	RequestID string                  `xml:"requestId"`
	Offerings []capacityBlockOffering `xml:"capacityBlockOfferingSet>item"`
	NextToken string                  `xml:"nextToken,omitempty"`
}

func errMissingParameter(name string) *apiError {
	return newError(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter %s", name)
}

// intParam reads an Integer query parameter; ok is false when absent.
func intParam(form url.Values, name string) (int, bool, *apiError) {
	v := form.Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, newError(http.StatusBadRequest, "InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected an integer.", v, name)
	}
	return n, true, nil
}

// timeParam reads a timestamp query parameter (ISO 8601, as the SDKs
// send them); zero when absent.
func timeParam(form url.Values, name string) (time.Time, *apiError) {
	v := form.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, newError(http.StatusBadRequest, "InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected a timestamp.", v, name)
	}
	return t, nil
}

// describeCapacityBlockOfferings answers synthetic offerings that are the
// same for the same question at the same wall-clock time: up to 6 blocks
// of exactly the asked duration and count, starting at 11:30 UTC on the
// first days at or after StartDateRange (default now) that fit before
// EndDateRange, two AZs a day. CapacityDurationHours is required (API
// reference); InstanceType and InstanceCount are too, as the API
// reference had them before UltraServers (the emulator has no
// UltraServers: a question about them has no offerings).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockOfferings.html
func (e *Emulator) describeCapacityBlockOfferings(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 1000)
	if err != nil {
		return nil, err
	}
	hours, ok, err := intParam(form, "CapacityDurationHours")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissingParameter("CapacityDurationHours")
	}
	if !validBlockHours(hours) {
		return nil, newError(http.StatusBadRequest, "InvalidParameterValue",
			"Value (%d) for parameter CapacityDurationHours is invalid. Specify the duration in 1-day increments up to 14 days, and in 7-day increments up to 182 days.", hours)
	}
	result := describeCapacityBlockOfferingsResult{RequestID: nextRequestID()}
	if form.Get("UltraserverType") != "" {
		return result, nil
	}
	typeName := form.Get("InstanceType")
	if typeName == "" {
		return nil, errMissingParameter("InstanceType")
	}
	count, ok, err := intParam(form, "InstanceCount")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissingParameter("InstanceCount")
	}
	if count < 1 || count > maxBlockInstances {
		return nil, newError(http.StatusBadRequest, "InvalidParameterValue", "Value (%d) for parameter InstanceCount is invalid. A Capacity Block can have 1 to %d instances.", count, maxBlockInstances)
	}
	from, err := timeParam(form, "StartDateRange")
	if err != nil {
		return nil, err
	}
	to, err := timeParam(form, "EndDateRange")
	if err != nil {
		return nil, err
	}
	t, known := ec2catalog.Lookup(typeName)
	if !known || !sellsCapacityBlocks(typeName) {
		return result, nil
	}
	now := time.Now()
	if from.Before(now) {
		from = now
	}
	result.Offerings = blockOfferings(e.opts.Region, t, count, hours, nextBlockBoundary(from), to, now)
	pageOfferings, next, ok := page(result.Offerings, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	result.Offerings, result.NextToken = pageOfferings, next
	return result, nil
}

// blockOfferings are the offerings of count instances of t for hours,
// starting at first or on a later day, ending by to (zero: no bound).
func blockOfferings(region string, t ec2catalog.InstanceType, count, hours int, first, to, now time.Time) []capacityBlockOffering {
	var out []capacityBlockOffering
	today := nextBlockBoundary(now)
	days := 0
	for d := 0; d < offeringSearchDays && days < offeringDays && len(out) < maxBlockOfferings; d++ {
		start := first.AddDate(0, 0, d)
		end := start.Add(time.Duration(hours) * time.Hour)
		if !to.IsZero() && end.After(to) {
			break
		}
		daysAhead := int(start.Sub(today).Hours() / 24)
		var zonesOffered []int
		for i, zone := range zones(region) {
			if offered(t.Name, zone) {
				zonesOffered = append(zonesOffered, i)
			}
		}
		if len(zonesOffered) == 0 {
			break
		}
		// Which AZs have the capacity turns with the day.
		for k := range min(offeringZonesPerStart, len(zonesOffered)) {
			i := zonesOffered[(daysAhead+k)%len(zonesOffered)]
			zone := zones(region)[i]
			out = append(out, capacityBlockOffering{
				CapacityBlockOfferingID:    resourceID("cb", t.Name, count, zone, start.Unix(), hours),
				InstanceType:               t.Name,
				AvailabilityZone:           zone,
				InstanceCount:              count,
				StartDate:                  ec2Time(start),
				EndDate:                    ec2Time(end),
				CapacityBlockDurationHours: hours,
				UpfrontFee:                 upfrontFee(blockHourlyUSD(t, i, daysAhead), hours, count),
				CurrencyCode:               "USD",
				Tenancy:                    reservationTenancy,
			})
		}
		days++
	}
	return out
}

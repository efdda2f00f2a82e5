package awsemu

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// awsCLIFails runs the AWS CLI, which must fail with the EC2 error code;
// it returns the CLI's error output.
func awsCLIFails(t *testing.T, code string, args ...string) string {
	t.Helper()
	cmd, cancel := awsCLICommand(t, args...)
	defer cancel()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("aws %s succeeded, want error %s:\n%s", strings.Join(args, " "), code, out)
	}
	if !strings.Contains(string(out), "("+code+")") {
		t.Fatalf("aws %s: want error %s, got:\n%s", strings.Join(args, " "), code, out)
	}
	return string(out)
}

// cliReservation is what the CLI prints of a CapacityReservation.
type cliReservation struct {
	CapacityReservationID  string `json:"CapacityReservationId"`
	CapacityReservationArn string
	InstanceType           string
	AvailabilityZone       string
	AvailabilityZoneID     string `json:"AvailabilityZoneId"`
	State                  string
	ReservationType        string
	InstanceMatchCriteria  string
	Tenancy                string
	EndDateType            string
	TotalInstanceCount     int
	AvailableInstanceCount int
	StartDate, EndDate     string
	CapacityBlockID        string `json:"CapacityBlockId"`
}

func describeReservationsCLI(t *testing.T, args ...string) []cliReservation {
	t.Helper()
	var out struct{ CapacityReservations []cliReservation }
	awsCLI(t, &out, append([]string{"ec2", "describe-capacity-reservations"}, args...)...)
	return out.CapacityReservations
}

func addReservation(t *testing.T, s CapacityReservationSeed) string {
	t.Helper()
	id, err := emu.AddCapacityReservation(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.EndCapacityReservation(id) })
	return id
}

func TestAWSCLIDescribeCapacityReservations(t *testing.T) {
	requireTestbed(t)
	now := time.Now()
	region := emu.Region()
	odcr := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: region + "a", Count: 2})
	block := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: region + "b", Count: 4, Block: true,
		Start: now.Add(time.Hour), End: now.Add(25 * time.Hour)})
	old := addReservation(t, CapacityReservationSeed{InstanceType: "g6.xlarge", AvailabilityZone: region + "c", Count: 1,
		Start: now.Add(-48 * time.Hour), End: now.Add(-24 * time.Hour)})

	got := describeReservationsCLI(t, "--capacity-reservation-ids", odcr)
	if len(got) != 1 {
		t.Fatalf("describe-capacity-reservations %s: %+v", odcr, got)
	}
	r := got[0]
	if r.CapacityReservationID != odcr || r.State != "active" || r.ReservationType != "default" || r.InstanceMatchCriteria != "open" ||
		r.EndDateType != "unlimited" || r.EndDate != "" || r.TotalInstanceCount != 2 || r.AvailableInstanceCount != 2 ||
		r.AvailabilityZone != region+"a" || r.AvailabilityZoneID == "" || r.Tenancy != "default" || r.CapacityBlockID != "" ||
		r.CapacityReservationArn != "arn:aws:ec2:"+region+":"+AccountID+":capacity-reservation/"+odcr {
		t.Errorf("the On-Demand Capacity Reservation: %+v", r)
	}

	got = describeReservationsCLI(t, "--capacity-reservation-ids", block)
	if len(got) != 1 || got[0].State != "scheduled" || got[0].ReservationType != "capacity-block" || got[0].InstanceMatchCriteria != "targeted" ||
		got[0].EndDateType != "limited" || !strings.HasPrefix(got[0].CapacityBlockID, "cb-") || got[0].AvailableInstanceCount != 4 {
		t.Errorf("the capacity block before its start: %+v", got)
	}
	if start, err := time.Parse(time.RFC3339, got[0].StartDate); err != nil || start.Sub(now.Add(time.Hour)).Abs() > time.Second {
		t.Errorf("the block's start %q, want %s", got[0].StartDate, now.Add(time.Hour))
	}

	got = describeReservationsCLI(t, "--capacity-reservation-ids", old)
	if len(got) != 1 || got[0].State != "expired" || got[0].AvailableInstanceCount != 0 {
		t.Errorf("a reservation past its end: %+v", got)
	}

	// Filters, and every page (the CLI follows NextToken with a page of one).
	ids := func(rs []cliReservation) []string {
		var out []string
		for _, r := range rs {
			if slices.Contains([]string{odcr, block, old}, r.CapacityReservationID) {
				out = append(out, r.CapacityReservationID)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		filters []string
		want    []string
	}{
		{[]string{"Name=state,Values=expired"}, []string{old}},
		{[]string{"Name=state,Values=active,scheduled", "Name=instance-type,Values=p5.*"}, []string{odcr, block}},
		{[]string{"Name=availability-zone,Values=" + region + "b"}, []string{block}},
		{[]string{"Name=instance-match-criteria,Values=targeted"}, []string{block}},
		{[]string{"Name=tenancy,Values=dedicated"}, nil},
		{[]string{"Name=end-date-type,Values=unlimited"}, []string{odcr}},
	} {
		want := slices.Clone(c.want)
		slices.Sort(want)
		got := ids(describeReservationsCLI(t, append([]string{"--page-size", "1", "--filters"}, c.filters...)...))
		if !slices.Equal(got, want) {
			t.Errorf("filters %v: got %v, want %v", c.filters, got, want)
		}
	}
	var firstPage struct {
		CapacityReservations []cliReservation
		NextToken            string
	}
	awsCLI(t, &firstPage, "ec2", "describe-capacity-reservations", "--max-items", "1")
	if len(firstPage.CapacityReservations) != 1 || firstPage.NextToken == "" {
		t.Errorf("a page of one: %+v", firstPage)
	}

	awsCLIFails(t, "InvalidCapacityReservationId.NotFound", "ec2", "describe-capacity-reservations", "--capacity-reservation-ids", "cr-0123456789abcdef0")
	awsCLIFails(t, "InvalidCapacityReservationId.Malformed", "ec2", "describe-capacity-reservations", "--capacity-reservation-ids", "reservation-1")
	awsCLIFails(t, "InvalidParameterValue", "ec2", "describe-capacity-reservations", "--filters", "Name=gpu-count,Values=8")

	// EndCapacityReservation: expired now, nothing available.
	if err := emu.EndCapacityReservation(odcr); err != nil {
		t.Fatal(err)
	}
	got = describeReservationsCLI(t, "--capacity-reservation-ids", odcr)
	if len(got) != 1 || got[0].State != "expired" || got[0].AvailableInstanceCount != 0 || got[0].EndDateType != "limited" {
		t.Errorf("an ended reservation: %+v", got)
	}
}

func TestAddCapacityReservationRefusesBadSeeds(t *testing.T) {
	requireTestbed(t)
	region := emu.Region()
	now := time.Now()
	for name, s := range map[string]CapacityReservationSeed{
		"unknown type":      {InstanceType: "p99.mega", AvailabilityZone: region + "a", Count: 1},
		"type not in zone":  {InstanceType: "p5.48xlarge", AvailabilityZone: region + "d", Count: 1},
		"other region":      {InstanceType: "p5.48xlarge", AvailabilityZone: "eu-west-1a", Count: 1},
		"no instances":      {InstanceType: "p5.48xlarge", AvailabilityZone: region + "a"},
		"block without end": {InstanceType: "p5.48xlarge", AvailabilityZone: region + "a", Count: 1, Block: true},
		"end before start":  {InstanceType: "p5.48xlarge", AvailabilityZone: region + "a", Count: 1, Start: now, End: now.Add(-time.Hour)},
		"open block":        {InstanceType: "p5.48xlarge", AvailabilityZone: region + "a", Count: 1, Block: true, End: now.Add(time.Hour), InstanceMatchCriteria: "open"},
	} {
		if id, err := emu.AddCapacityReservation(s); err == nil {
			t.Errorf("%s: added %s", name, id)
		}
	}
	// Over HTTP, as a detached testbed's controls go.
	var out struct{ ID string }
	seed := CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: region + "c", Count: 3}
	if err := testbed.CallControl(nil, emu.EKSEndpoint(), "add-capacity-reservation", seed, &out); err != nil || !wellFormedID(out.ID, "cr-") {
		t.Fatalf("add-capacity-reservation over HTTP: %q, %v", out.ID, err)
	}
	if err := testbed.CallControl(nil, emu.EKSEndpoint(), "end-capacity-reservation", map[string]string{"id": out.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if got := describeReservationsCLI(t, "--capacity-reservation-ids", out.ID); len(got) != 1 || got[0].State != "expired" || got[0].TotalInstanceCount != 3 {
		t.Errorf("a reservation added and ended over HTTP: %+v", got)
	}
	if err := testbed.CallControl(nil, emu.EKSEndpoint(), "add-capacity-reservation", CapacityReservationSeed{InstanceType: "nope"}, nil); err == nil {
		t.Error("add-capacity-reservation over HTTP accepted a bad seed")
	}
}

type cliOffering struct {
	CapacityBlockOfferingID    string `json:"CapacityBlockOfferingId"`
	InstanceType               string
	AvailabilityZone           string
	InstanceCount              int
	StartDate, EndDate         string
	CapacityBlockDurationHours int
	UpfrontFee, CurrencyCode   string
	Tenancy                    string
}

func TestAWSCLIDescribeCapacityBlockOfferings(t *testing.T) {
	requireTestbed(t)
	var out struct{ CapacityBlockOfferings []cliOffering }
	args := []string{"ec2", "describe-capacity-block-offerings", "--instance-type", "p5.48xlarge", "--instance-count", "2", "--capacity-duration-hours", "48"}
	awsCLI(t, &out, args...)
	offerings := out.CapacityBlockOfferings
	if len(offerings) != maxBlockOfferings {
		t.Fatalf("want %d offerings, got %+v", maxBlockOfferings, offerings)
	}
	seen := map[string]bool{}
	for _, o := range offerings {
		start, err1 := time.Parse(time.RFC3339, o.StartDate)
		end, err2 := time.Parse(time.RFC3339, o.EndDate)
		fee, err3 := strconv.ParseFloat(o.UpfrontFee, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("offering %+v: %v %v %v", o, err1, err2, err3)
		}
		if o.InstanceType != "p5.48xlarge" || o.InstanceCount != 2 || o.CapacityBlockDurationHours != 48 || o.CurrencyCode != "USD" ||
			o.Tenancy != "default" || fee <= 0 || !strings.HasPrefix(o.CapacityBlockOfferingID, "cb-") || seen[o.CapacityBlockOfferingID] {
			t.Errorf("offering %+v", o)
		}
		seen[o.CapacityBlockOfferingID] = true
		if h, m := end.UTC().Hour(), end.UTC().Minute(); h != 11 || m != 30 || end.Sub(start) != 48*time.Hour || start.Before(time.Now().Add(-time.Minute)) {
			t.Errorf("offering from %s to %s: want 48 hours ending at 11:30 UTC, from now on", start, end)
		}
		if !offered(o.InstanceType, o.AvailabilityZone) {
			t.Errorf("offering in %s, where %s is not offered", o.AvailabilityZone, o.InstanceType)
		}
	}
	// The same question gets the same answer (within the same day).
	var again struct{ CapacityBlockOfferings []cliOffering }
	awsCLI(t, &again, args...)
	if !slices.Equal(again.CapacityBlockOfferings, offerings) && nextBlockBoundary(time.Now()).Equal(nextBlockBoundary(time.Now().Add(-time.Minute))) {
		t.Errorf("a second answer differs:\n%+v\n%+v", again.CapacityBlockOfferings, offerings)
	}

	// A date range: starts no earlier, ends no later.
	from := time.Now().UTC().AddDate(0, 0, 10)
	to := nextBlockBoundary(from).Add(24 * time.Hour)
	awsCLI(t, &out, "ec2", "describe-capacity-block-offerings", "--instance-type", "p5e.48xlarge", "--instance-count", "1",
		"--capacity-duration-hours", "24", "--start-date-range", from.Format(time.RFC3339), "--end-date-range", to.Format(time.RFC3339))
	if len(out.CapacityBlockOfferings) != offeringZonesPerStart {
		t.Fatalf("one day's offerings, want %d: %+v", offeringZonesPerStart, out.CapacityBlockOfferings)
	}
	for _, o := range out.CapacityBlockOfferings {
		if start, _ := time.Parse(time.RFC3339, o.StartDate); start.Before(from) || !start.Equal(nextBlockBoundary(from)) {
			t.Errorf("offering starts %s, want %s", o.StartDate, nextBlockBoundary(from))
		}
	}
	// Longer blocks cost more than shorter ones of the same start.
	var week struct{ CapacityBlockOfferings []cliOffering }
	awsCLI(t, &week, "ec2", "describe-capacity-block-offerings", "--instance-type", "p5e.48xlarge", "--instance-count", "1",
		"--capacity-duration-hours", "168", "--start-date-range", from.Format(time.RFC3339))
	if len(week.CapacityBlockOfferings) == 0 || feeOf(t, week.CapacityBlockOfferings[0]) <= feeOf(t, out.CapacityBlockOfferings[0]) {
		t.Errorf("a week's block %+v costs no more than a day's %+v", week.CapacityBlockOfferings, out.CapacityBlockOfferings)
	}

	// Types EC2 sells no blocks of have no offerings.
	awsCLI(t, &out, "ec2", "describe-capacity-block-offerings", "--instance-type", "g6.xlarge", "--instance-count", "1", "--capacity-duration-hours", "24")
	if len(out.CapacityBlockOfferings) != 0 {
		t.Errorf("offerings of g6.xlarge: %+v", out.CapacityBlockOfferings)
	}
	for _, hours := range []string{"36", "0", "360", "4392"} { // 1.5 days, none, 15 days, 183 days
		awsCLIFails(t, "InvalidParameterValue", "ec2", "describe-capacity-block-offerings", "--instance-type", "p5.48xlarge", "--instance-count", "1", "--capacity-duration-hours", hours)
	}
	for _, hours := range []string{"216", "504", "4368"} { // 9 days, 3 weeks, 26 weeks
		awsCLI(t, &out, "ec2", "describe-capacity-block-offerings", "--instance-type", "p5.48xlarge", "--instance-count", "1", "--capacity-duration-hours", hours)
		if len(out.CapacityBlockOfferings) == 0 {
			t.Errorf("no offerings of %s hours", hours)
		}
	}
	awsCLIFails(t, "InvalidParameterValue", "ec2", "describe-capacity-block-offerings", "--instance-type", "p5.48xlarge", "--instance-count", "65", "--capacity-duration-hours", "24")
	awsCLIFails(t, "MissingParameter", "ec2", "describe-capacity-block-offerings", "--instance-type", "p5.48xlarge", "--capacity-duration-hours", "24")
}

func feeOf(t *testing.T, o cliOffering) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(o.UpfrontFee, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// timeIn is now plus hours.
func timeIn(hours float64) time.Time {
	return time.Now().Add(time.Duration(hours * float64(time.Hour)))
}

func TestAWSCLICapacityBlocksStatusExtensionsTopology(t *testing.T) {
	requireTestbed(t)
	region := emu.Region()
	active := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: region + "b", Count: 4, Block: true,
		Start: timeIn(-1), End: timeIn(47)})
	later := addReservation(t, CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: region + "c", Count: 2, Block: true,
		Start: timeIn(24), End: timeIn(72)})
	odcr := addReservation(t, CapacityReservationSeed{InstanceType: "g6.xlarge", AvailabilityZone: region + "a", Count: 1})
	blockOf := func(id string) string {
		got := describeReservationsCLI(t, "--capacity-reservation-ids", id)
		if len(got) != 1 {
			t.Fatalf("reservation %s: %+v", id, got)
		}
		return got[0].CapacityBlockID
	}
	activeBlock, laterBlock := blockOf(active), blockOf(later)

	var blocks struct {
		CapacityBlocks []struct {
			CapacityBlockID        string   `json:"CapacityBlockId"`
			CapacityReservationIDs []string `json:"CapacityReservationIds"`
			AvailabilityZone       string
			State                  string
			StartDate, EndDate     string
		}
	}
	awsCLI(t, &blocks, "ec2", "describe-capacity-blocks", "--capacity-block-ids", activeBlock, laterBlock)
	if len(blocks.CapacityBlocks) != 2 || blocks.CapacityBlocks[0].State != "active" || blocks.CapacityBlocks[1].State != "scheduled" ||
		len(blocks.CapacityBlocks[0].CapacityReservationIDs) != 1 || blocks.CapacityBlocks[0].CapacityReservationIDs[0] != active ||
		blocks.CapacityBlocks[1].AvailabilityZone != region+"c" {
		t.Errorf("describe-capacity-blocks: %+v", blocks)
	}
	awsCLI(t, &blocks, "ec2", "describe-capacity-blocks", "--filters", "Name=state,Values=scheduled", "Name=capacity-block-id,Values="+activeBlock+","+laterBlock)
	if len(blocks.CapacityBlocks) != 1 || blocks.CapacityBlocks[0].CapacityBlockID != laterBlock {
		t.Errorf("describe-capacity-blocks state=scheduled: %+v", blocks)
	}

	var status struct {
		CapacityBlockStatuses []struct {
			CapacityBlockID                                                 string `json:"CapacityBlockId"`
			InterconnectStatus                                              string
			TotalCapacity, TotalAvailableCapacity, TotalUnavailableCapacity int
			CapacityReservationStatuses                                     []struct {
				CapacityReservationID string `json:"CapacityReservationId"`
				TotalCapacity         int
			}
		}
	}
	awsCLI(t, &status, "ec2", "describe-capacity-block-status", "--capacity-block-ids", activeBlock)
	if s := status.CapacityBlockStatuses; len(s) != 1 || s[0].InterconnectStatus != "ok" || s[0].TotalCapacity != 4 || s[0].TotalAvailableCapacity != 4 ||
		len(s[0].CapacityReservationStatuses) != 1 || s[0].CapacityReservationStatuses[0].CapacityReservationID != active {
		t.Errorf("describe-capacity-block-status: %+v", s)
	}

	var ext struct {
		CapacityBlockExtensionOfferings []struct {
			CapacityBlockExtensionOfferingID                               string `json:"CapacityBlockExtensionOfferingId"`
			InstanceType                                                   string
			InstanceCount                                                  int
			CapacityBlockExtensionStartDate, CapacityBlockExtensionEndDate string
			CapacityBlockExtensionDurationHours                            int
			UpfrontFee, CurrencyCode                                       string
		}
	}
	awsCLI(t, &ext, "ec2", "describe-capacity-block-extension-offerings", "--capacity-reservation-id", active, "--capacity-block-extension-duration-hours", "48")
	if len(ext.CapacityBlockExtensionOfferings) != 1 {
		t.Fatalf("extension offerings: %+v", ext)
	}
	o := ext.CapacityBlockExtensionOfferings[0]
	start, _ := time.Parse(time.RFC3339, o.CapacityBlockExtensionStartDate)
	end, _ := time.Parse(time.RFC3339, o.CapacityBlockExtensionEndDate)
	if o.InstanceType != "p5.48xlarge" || o.InstanceCount != 4 || o.CapacityBlockExtensionDurationHours != 48 || end.Sub(start) != 48*time.Hour ||
		start.Sub(timeIn(47)).Abs() > time.Minute || o.CurrencyCode != "USD" || o.UpfrontFee == "" {
		t.Errorf("extension offering: %+v", o)
	}
	// An On-Demand Capacity Reservation is no block: nothing to extend.
	awsCLI(t, &ext, "ec2", "describe-capacity-block-extension-offerings", "--capacity-reservation-id", odcr, "--capacity-block-extension-duration-hours", "24")
	if len(ext.CapacityBlockExtensionOfferings) != 0 {
		t.Errorf("extension offerings of an ODCR: %+v", ext)
	}
	awsCLIFails(t, "InvalidCapacityReservationId.NotFound", "ec2", "describe-capacity-block-extension-offerings", "--capacity-reservation-id", "cr-0123456789abcdef0", "--capacity-block-extension-duration-hours", "24")
	awsCLIFails(t, "InvalidParameterValue", "ec2", "describe-capacity-block-extension-offerings", "--capacity-reservation-id", active, "--capacity-block-extension-duration-hours", "30")

	var topo struct {
		CapacityReservations []struct {
			CapacityReservationID string `json:"CapacityReservationId"`
			State, InstanceType   string
			NetworkNodes          []string
			AvailabilityZone      string
		}
	}
	awsCLI(t, &topo, "ec2", "describe-capacity-reservation-topology", "--capacity-reservation-ids", active, later, odcr)
	if len(topo.CapacityReservations) != 3 {
		t.Fatalf("topology: %+v", topo)
	}
	for _, r := range topo.CapacityReservations {
		wantNodes := 0
		if r.CapacityReservationID == active { // p5 and active; the p4d block is not active yet, g6 has no topology
			wantNodes = 3
		}
		if len(r.NetworkNodes) != wantNodes {
			t.Errorf("topology of %s (%s, %s): %v", r.CapacityReservationID, r.InstanceType, r.State, r.NetworkNodes)
		}
	}
	awsCLIFails(t, "InvalidCapacityReservationId.NotFound", "ec2", "describe-capacity-reservation-topology", "--capacity-reservation-ids", "cr-0123456789abcdef0")
	awsCLI(t, &topo, "ec2", "describe-capacity-reservation-topology", "--filters", "Name=instance-type,Values=p5*")
	if len(topo.CapacityReservations) == 0 {
		t.Error("topology filtered to p5*: none")
	}
	for _, r := range topo.CapacityReservations {
		if !strings.HasPrefix(r.InstanceType, "p5") {
			t.Errorf("topology filtered to p5*: %+v", r)
		}
	}
}

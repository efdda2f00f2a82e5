package awsemu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// blockTemplate creates a launch template that targets a reservation as
// a Capacity Block (or an ODCR, market ""), deleted at the end.
func blockTemplate(t *testing.T, c clients, name, reservation, market string) string {
	t.Helper()
	data := &ec2types.RequestLaunchTemplateData{
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(reservation)},
		},
	}
	if market != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketType(market)}
	}
	out, err := c.ec2.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.LaunchTemplate.LaunchTemplateId)
	t.Cleanup(func() {
		_, _ = c.ec2.DeleteLaunchTemplate(context.Background(), &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	})
	return id
}

// available is the reservation's AvailableInstanceCount and state, as the
// SDK reads them.
func available(t *testing.T, c clients, id string) (int32, ec2types.CapacityReservationState) {
	t.Helper()
	out, err := c.ec2.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.CapacityReservations[0]
	return aws.ToInt32(r.AvailableInstanceCount), r.State
}

func launchIssue(ng *ekstypes.Nodegroup) string {
	if ng.Health == nil {
		return ""
	}
	for _, i := range ng.Health.Issues {
		if i.Code == ekstypes.NodegroupIssueCodeAsgInstanceLaunchFailures {
			return aws.ToString(i.Message)
		}
	}
	return ""
}

func TestGroupInACapacityBlockLaunchesThereAndLosesItsNodesAtTheEnd(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	zone := emu.Region() + "b"
	block := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: zone, Count: 2, Block: true, End: timeIn(3)})
	lt := blockTemplate(t, c, "block-group-lt", block, "capacity-block")

	const name = "in-a-block"
	deleteGroupAtEnd(t, name)
	in := gpuGroupInput(name, "p5.48xlarge", "AL2023_x86_64_NVIDIA", 0, 3, 4)
	in.CapacityType = ekstypes.CapacityTypesCapacityBlock
	in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Id: aws.String(lt)}
	if _, err := c.eks.CreateNodegroup(ctx, in); err != nil {
		t.Fatal(err)
	}
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if v := aws.ToString(ng.LaunchTemplate.Version); v != "1" || aws.ToString(ng.LaunchTemplate.Name) != "block-group-lt" {
		t.Errorf("the group's launch template: %+v", ng.LaunchTemplate)
	}
	// Three asked, two held: both in the block's AZ, and the shortfall
	// reported as EKS reports it.
	for _, node := range waitGroupNodes(t, name, 2) {
		if got := node.Labels["topology.kubernetes.io/zone"]; got != zone {
			t.Errorf("node %s in %s, want the block's %s", node.Name, got, zone)
		}
		if got := node.Labels["eks.amazonaws.com/capacityType"]; got != "CAPACITY_BLOCK" {
			t.Errorf("node %s capacityType label %q", node.Name, got)
		}
	}
	if n, state := available(t, c, block); n != 0 || state != ec2types.CapacityReservationStateActive {
		t.Errorf("the block with 2 instances of 2: available %d, %s", n, state)
	}
	ng = waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if msg := launchIssue(ng); !strings.Contains(msg, "ReservationCapacityExceeded") {
		t.Errorf("health issues of a group asking for more than its block: %+v", ng.Health)
	}

	// Scale in: the block's capacity comes back.
	update, err := c.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(1), MaxSize: aws.Int32(4)}})
	if err != nil {
		t.Fatal(err)
	}
	waitUpdateSuccessful(t, c, name, aws.ToString(update.Update.Id))
	waitGroupNodes(t, name, 1)
	if n, _ := available(t, c, block); n != 1 {
		t.Errorf("after scaling in to 1: available %d, want 1", n)
	}
	if msg := launchIssue(waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)); msg != "" {
		t.Errorf("a group that fits its block still reports %q", msg)
	}

	// The block ends: its instances go, the group says why.
	if err := emu.EndCapacityReservation(block); err != nil {
		t.Fatal(err)
	}
	waitGroupNodes(t, name, 0)
	if n, state := available(t, c, block); n != 0 || state != ec2types.CapacityReservationStateExpired {
		t.Errorf("an ended block: available %d, %s", n, state)
	}
	if msg := launchIssue(waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)); !strings.Contains(msg, block) {
		t.Errorf("a group whose block ended: issue %q", msg)
	}
}

func TestBlockLaunchesNothingBeforeItsStartAndReclaimsBeforeItsEnd(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	zone := emu.Region() + "c"
	// Starts in a few seconds; EC2 takes its instances back 30 minutes
	// before its end, which is a few seconds after that.
	start := time.Now().Add(3 * time.Second)
	end := start.Add(blockReclaimLead + 4*time.Second)
	block := addReservation(t, CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: zone, Count: 1, Block: true, Start: start, End: end})
	blockTemplate(t, c, "scheduled-block-lt", block, "capacity-block")
	const name = "waits-for-its-block"
	deleteGroupAtEnd(t, name)
	in := gpuGroupInput(name, "p4d.24xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 1)
	in.CapacityType = ekstypes.CapacityTypesCapacityBlock
	in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Name: aws.String("scheduled-block-lt"), Version: aws.String("$Latest")}
	if _, err := c.eks.CreateNodegroup(ctx, in); err != nil {
		t.Fatal(err)
	}
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if time.Now().Before(start) {
		if nodes := groupNodes(t, name); len(nodes) != 0 {
			t.Errorf("%d nodes before the block starts", len(nodes))
		}
		if msg := launchIssue(ng); msg != "" {
			t.Errorf("a group waiting for its block reports %q", msg)
		}
	}
	node := waitGroupNodes(t, name, 1)[0]
	if time.Now().Before(start) {
		t.Errorf("node %s registered before the block's start %s", node.Name, start)
	}
	waitGroupNodes(t, name, 0)
	if time.Now().Before(end.Add(-blockReclaimLead)) {
		t.Errorf("the block's node left before EC2 reclaims it (%s)", end.Add(-blockReclaimLead))
	}
	if _, state := available(t, c, block); state != ec2types.CapacityReservationStateActive {
		t.Errorf("a block being reclaimed is %s until its end, want active", state)
	}
}

func TestCapacityBlockGroupNeedsACapacityBlockTemplate(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	block := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: emu.Region() + "a", Count: 1, Block: true, End: timeIn(3)})
	odcrTemplate := blockTemplate(t, c, "no-market-lt", block, "")
	for name, lt := range map[string]*ekstypes.LaunchTemplateSpecification{
		"no launch template":          nil,
		"a template without a market": {Id: aws.String(odcrTemplate)},
	} {
		in := gpuGroupInput("cb-refused", "p5.48xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 1)
		in.CapacityType = ekstypes.CapacityTypesCapacityBlock
		in.LaunchTemplate = lt
		_, err := c.eks.CreateNodegroup(context.Background(), in)
		if msg := apiErrorMessage(t, err, "InvalidParameterException"); !strings.Contains(msg, "capacity-block") {
			t.Errorf("%s: %s", name, msg)
		}
	}
}

func TestGroupWithoutOnDemandCapacityFailsAsEKSReports(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	zones := []string{emu.Region() + "a", emu.Region() + "b", emu.Region() + "c", emu.Region() + "d"}
	for _, z := range zones {
		emu.SetOnDemandCapacity("g6e.xlarge", z, false)
	}
	t.Cleanup(func() {
		for _, z := range zones {
			emu.SetOnDemandCapacity("g6e.xlarge", z, true)
		}
	})
	const name = "no-capacity"
	deleteGroupAtEnd(t, name)
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(name, "g6e.xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusCreateFailed)
	if msg := launchIssue(ng); !strings.Contains(msg, "InsufficientInstanceCapacity") || !strings.Contains(msg, "g6e.xlarge") {
		t.Errorf("health of a group without capacity: %+v", ng.Health)
	}
	// An open On-Demand Capacity Reservation in one of its zones is used
	// without being named.
	odcr := addReservation(t, CapacityReservationSeed{InstanceType: "g6e.xlarge", AvailabilityZone: zones[1], Count: 1})
	const second = "in-an-open-odcr"
	deleteGroupAtEnd(t, second)
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(second, "g6e.xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	waitNodegroupStatus(t, c, second, ekstypes.NodegroupStatusActive)
	if node := waitGroupNodes(t, second, 1)[0]; node.Labels["topology.kubernetes.io/zone"] != zones[1] {
		t.Errorf("node in %s, want the open reservation's %s", node.Labels["topology.kubernetes.io/zone"], zones[1])
	}
	if n, _ := available(t, c, odcr); n != 0 {
		t.Errorf("the open reservation with the group's instance: available %d", n)
	}
}

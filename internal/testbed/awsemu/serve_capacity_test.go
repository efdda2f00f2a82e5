package awsemu

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// TestEmulatorProcessSeedsCapacity starts the emulator as its own process
// with Options.CapacityReservations (passed as serve-aws flags) and drives
// the capacity controls over HTTP.
func TestEmulatorProcessSeedsCapacity(t *testing.T) {
	requireTestbed(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	remote := New(Options{ClusterName: "remote-capacity", Command: []string{"/bin/sh", "-c", serveEnv + `=1 exec "$0" "$@"`, self},
		CapacityReservations: []CapacityReservationSeed{
			{InstanceType: "p5.48xlarge", AvailabilityZone: DefaultRegion + "a", Count: 8, Block: true, End: timeIn(48)},
			{InstanceType: "g6e.xlarge", AvailabilityZone: DefaultRegion + "b", Count: 2},
		}})
	testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{remote}})
	client := ec2.NewFromConfig(sdkConfig(SecretAccessKey), func(o *ec2.Options) { o.BaseEndpoint = aws.String(remote.EC2Endpoint()) })
	ctx := context.Background()

	out, err := client.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CapacityReservations) != 2 || out.CapacityReservations[0].ReservationType != ec2types.CapacityReservationTypeCapacityBlock ||
		aws.ToInt32(out.CapacityReservations[0].TotalInstanceCount) != 8 || out.CapacityReservations[1].InstanceMatchCriteria != ec2types.InstanceMatchCriteriaOpen {
		t.Fatalf("the seeded reservations: %+v", out.CapacityReservations)
	}
	id, err := remote.AddCapacityReservation(CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: DefaultRegion + "c", Count: 1})
	if err != nil || !wellFormedID(id, "cr-") {
		t.Fatalf("AddCapacityReservation over HTTP: %q, %v", id, err)
	}
	if err := remote.EndCapacityReservation(id); err != nil {
		t.Fatal(err)
	}
	if err := remote.EndCapacityReservation("cr-0000000000000000f"); err == nil {
		t.Error("ending an unknown reservation over HTTP succeeded")
	}
	if _, err := remote.AddCapacityReservation(CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: DefaultRegion + "a", Count: 1, Block: true}); err == nil {
		t.Error("a block without an end was added over HTTP")
	}
	remote.SetOnDemandCapacity("g6e.xlarge", DefaultRegion+"a", false)
	ended, err := client.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if ended.CapacityReservations[0].State != ec2types.CapacityReservationStateExpired {
		t.Errorf("a reservation ended over HTTP: %s", ended.CapacityReservations[0].State)
	}
}

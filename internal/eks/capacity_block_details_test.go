package eks

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestCapacityBlockFactsFromEC2WithStatus(t *testing.T) {
	f := capacityBlockFactsFromEC2(ec2types.CapacityBlock{
		CapacityBlockId:        aws.String("cb-0123456789abcdef0"),
		State:                  ec2types.CapacityBlockResourceStateActive,
		UltraserverType:        aws.String("u-p6e-gb200x72"),
		CapacityReservationIds: []string{"cr-1", "cr-2"},
	})
	addCapacityBlockStatus(&f, ec2types.CapacityBlockStatus{
		CapacityBlockId:          aws.String("cb-0123456789abcdef0"),
		InterconnectStatus:       ec2types.CapacityBlockInterconnectStatusImpaired,
		TotalCapacity:            aws.Int32(18),
		TotalAvailableCapacity:   aws.Int32(10),
		TotalUnavailableCapacity: aws.Int32(8),
	})
	want := CapacityBlockFacts{
		ID: "cb-0123456789abcdef0", State: "active", UltraServerType: "u-p6e-gb200x72", ReservationIDs: []string{"cr-1", "cr-2"},
		InterconnectStatus: "impaired", TotalCapacity: 18, AvailableCapacity: 10, UnavailableCapacity: 8,
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("block facts:\n got %+v\nwant %+v", f, want)
	}
}

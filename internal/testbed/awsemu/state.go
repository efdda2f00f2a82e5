package awsemu

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// state is everything the emulator holds; Emulator.mu guards it.
type state struct {
	region, clusterName string
	clusterCreatedAt    time.Time
	caPEM               []byte // the testbed CA: the cluster's certificateAuthority
	clusterTags         map[string]string

	nodegroups map[string]*nodegroup // by cluster + "/" + name
	asgs       map[string]*autoScalingGroup

	activeDelay, joinDelay time.Duration
	throttle               int          // calls still to throttle
	failNextCreate         *healthIssue // the next CreateNodegroup goes CREATE_FAILED with it
	calls                  map[string]int
	nodeSeq                int // names nodes and instances uniquely

	// EC2 capacity (capacity.go): the account's reservations in the
	// order they were added, and the (type, zone) pairs SetOnDemandCapacity
	// took on-demand capacity away from.
	reservations   []*capacityReservation
	reservationSeq int
	noOnDemand     map[string]bool // by instanceType + "/" + zone

	// launchTemplates are EC2's launch templates (ec2_launch_templates.go).
	launchTemplates   []*launchTemplate
	launchTemplateSeq int

	// repair is node auto repair's state (node_repair.go).
	repair repairState
}

func newState(opts Options) *state {
	return &state{
		region:           opts.Region,
		clusterName:      opts.ClusterName,
		clusterCreatedAt: time.Now().UTC().Truncate(time.Second),
		nodegroups:       map[string]*nodegroup{},
		asgs:             map[string]*autoScalingGroup{},
		activeDelay:      opts.ActiveDelay,
		joinDelay:        opts.NodeJoinDelay,
		calls:            map[string]int{},
		noOnDemand:       map[string]bool{},
		repair:           newRepairState(opts.RepairMinute),
	}
}

// newUUID is a random RFC 4122 version 4 UUID, as EKS's update IDs and
// ARN suffixes are.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// epochSeconds is a timestamp as REST-JSON sends it by default.
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}

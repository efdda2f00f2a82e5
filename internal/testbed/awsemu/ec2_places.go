package awsemu

import (
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// The test VPC: one subnet per AZ of the region (a to d).
const testVPC = "vpc-0a1b2c3d4e5f60000"

type testSubnet struct {
	id, zoneSuffix, zoneID, cidr string
}

var testSubnets = []testSubnet{
	{"subnet-0a1b2c3d4e5f60001", "a", "usw2-az1", "10.0.0.0/19"},
	{"subnet-0a1b2c3d4e5f60002", "b", "usw2-az2", "10.0.32.0/19"},
	{"subnet-0a1b2c3d4e5f60003", "c", "usw2-az3", "10.0.64.0/19"},
	{"subnet-0a1b2c3d4e5f60004", "d", "usw2-az4", "10.0.96.0/19"},
}

// subnetZone is the AZ of a test subnet in the region: the subnets are
// the same in any region the emulator is started for.
func subnetZone(region, id string) (string, bool) {
	i := slices.IndexFunc(testSubnets, func(s testSubnet) bool { return s.id == id })
	if i < 0 {
		return "", false
	}
	return region + testSubnets[i].zoneSuffix, true
}

// zones are the region's AZs.
func zones(region string) []string {
	out := make([]string, len(testSubnets))
	for i, s := range testSubnets {
		out[i] = region + s.zoneSuffix
	}
	return out
}

// notInZoneD are the families the emulator does not offer in the
// region's fourth AZ (us-west-2d): the large accelerated types that real
// regions offer in a few AZs only.
var notInZoneD = []string{"p3", "p4d", "p4de", "p5", "p5e", "p5en", "trn1", "dl1", "g6e", "gr6"}

// offered reports whether an instance type is offered in an AZ: every
// catalog type in the first three AZs, and in the fourth all but the
// notInZoneD families.
func offered(instanceType, zone string) bool {
	if _, ok := ec2catalog.Lookup(instanceType); !ok {
		return false
	}
	if len(zone) < 2 || !slices.Contains(zones(zone[:len(zone)-1]), zone) {
		return false
	}
	family, _, _ := strings.Cut(instanceType, ".")
	return !strings.HasSuffix(zone, "d") || !slices.Contains(notInZoneD, family)
}

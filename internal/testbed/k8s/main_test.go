package k8s

import (
	"os"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// cluster is the testbed shared by this package's cluster tests; nil when
// the binaries are missing (see testbed.SkipIfUnavailable).
var cluster *Cluster

// testFleet has a node of each kind the cluster tests look at.
var testFleet = []NodeSpec{
	{Name: "gpu-p5-0", InstanceType: mustInstanceType("p5.48xlarge"), GFDLabeled: true},
	{Name: "gpu-g4dn-0", InstanceType: mustInstanceType("g4dn.xlarge")},
	{Name: "cpu-m5-0", InstanceType: mustInstanceType("m5.xlarge")},
}

func TestMain(m *testing.M) {
	c := New(Options{Nodes: testFleet})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{c}}, func(*testbed.Testbed) { cluster = c }))
}

func mustInstanceType(name string) ec2catalog.InstanceType {
	t, ok := ec2catalog.Lookup(name)
	if !ok {
		panic("unknown instance type " + name)
	}
	return t
}

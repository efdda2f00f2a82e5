package testbed

import (
	"os"
	"testing"
)

// cluster is the testbed shared by this package's cluster tests; nil when
// the binaries are missing (see SkipIfUnavailable).
var cluster *Testbed

// testFleet has a node of each kind the cluster tests look at.
var testFleet = []NodeSpec{
	{Name: "gpu-p5-0", Profile: mustProfile("p5.48xlarge")},
	{Name: "gpu-g4dn-0", Profile: mustProfile("g4dn.xlarge")},
	{Name: "cpu-m5-0", Profile: mustProfile("m5.xlarge")},
}

func TestMain(m *testing.M) {
	os.Exit(Main(m, Options{Nodes: testFleet}, func(tb *Testbed) { cluster = tb }))
}

func mustProfile(instanceType string) Profile {
	p, ok := ProfileByInstanceType(instanceType)
	if !ok {
		panic("unknown instance type " + instanceType)
	}
	return p
}

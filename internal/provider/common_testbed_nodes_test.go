package provider

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// instanceType is the testbed's profile of an EC2 instance type, for a
// node of that type.
func instanceType(t *testing.T, name string) ec2catalog.InstanceType {
	t.Helper()
	p, ok := ec2catalog.Lookup(name)
	require.True(t, ok, name)
	return p
}

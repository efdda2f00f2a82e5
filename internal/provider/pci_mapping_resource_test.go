package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// A create PVE refused because the ID is taken is told apart from a create
// whose answer was lost: the first must not read the mapping back into the
// state (it is not this resource's), the second must.
func TestMappingAlreadyDefined_onlyPVEsRefusalOfATakenID(t *testing.T) {
	taken := fmt.Errorf("creating PCI mapping pool: %w", &proxmox.APIError{Status: "500",
		Message: "create hardware mapping failed: pci ID 'pool' already defined"})
	require.True(t, mappingAlreadyDefined(taken))
	for _, err := range []error{
		nil,
		errors.New("context deadline exceeded"),
		&proxmox.APIError{Status: "500", Message: "create hardware mapping failed: can't lock file '/var/lock/pve-manager/pve-mapping-pci' - got timeout"},
		&proxmox.APIError{Status: "596", Message: "Connection timed out"},
	} {
		require.False(t, mappingAlreadyDefined(err), "%v", err)
	}
	diags := pciMappingBackendError(`creating Proxmox VE PCI mapping "pool"`, nil, "pool", true, taken)
	require.Len(t, diags, 1)
	require.Contains(t, diags[0].Detail(), "terraform import gpu_pci_mapping.<resource name> pool")
	require.Contains(t, diags[0].Detail(), "does not take it over")
}

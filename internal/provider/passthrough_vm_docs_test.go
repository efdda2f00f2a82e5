package provider

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// Every "`<privilege>` on `<path>`" that gpu_passthrough_vm's and
// gpu_inventory's pages name is one internal/proxmox/privileges.go lists
// (the one home of the privileges, which the guide's table is built from),
// and each page links to that table.
func TestProxmoxPagesNameOnlyListedPrivileges(t *testing.T) {
	listed := func(priv, at string) bool {
		return slices.ContainsFunc(proxmox.Privileges, func(p proxmox.Privilege) bool {
			return p.Path == at && slices.Contains(p.Privs, priv)
		})
	}
	named := regexp.MustCompile("`([A-Z][A-Za-z]+\\.[A-Za-z.]+)` on `(/[^`]*)`")
	for _, page := range []string{"../../docs/resources/passthrough_vm.md", "../../docs/data-sources/inventory.md"} {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		found := named.FindAllStringSubmatch(string(data), -1)
		require.NotEmpty(t, found, page)
		for _, m := range found {
			require.True(t, listed(m[1], m[2]), "%s names %s on %s, which privileges.go does not list (run make generate after fixing "+
				"the template)", page, m[1], m[2])
		}
		require.Contains(t, string(data), "(../guides/proxmox.md#privileges-of-an-api-token)", page)
	}
}

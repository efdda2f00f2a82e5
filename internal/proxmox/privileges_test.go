package proxmox

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// validPrivileges are the privileges each PVE version knows: pve-access-control
// src/PVE/AccessControl.pm, $privgroups (master for 9, stable-bookworm for 8);
// `pveum role add` dies "invalid privilege" on any other (add_role_privs).
func validPrivileges(pveMajor int) []string {
	common := []string{
		"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
		"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.Migrate", "VM.Snapshot", "VM.Snapshot.Rollback",
		"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.PowerMgmt", "VM.Audit",
		"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork", "Sys.Console", "Sys.Syslog", "Sys.Audit",
		"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.AllocateSpace", "Datastore.Audit",
		"SDN.Allocate", "SDN.Audit", "SDN.Use", "Realm.Allocate", "User.Modify", "Group.Allocate", "Realm.AllocateUser",
		"Pool.Allocate", "Pool.Audit", "Mapping.Modify", "Mapping.Use", "Mapping.Audit", "Permissions.Modify",
	}
	if pveMajor == 8 {
		return append(common, "VM.Monitor")
	}
	return append(common, "VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileWrite",
		"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.Unrestricted", "VM.Replicate")
}

func TestPrivilegesEachNameAValidPrivilegeAndItsSource(t *testing.T) {
	for _, p := range Privileges {
		require.NotEmpty(t, p.Source, "%s %v", p.Path, p.Privs)
		require.NotEmpty(t, p.Why, "%s %v", p.Path, p.Privs)
		require.Contains(t, []string{"", "8", "9"}, p.PVE)
		for _, v := range []int{8, 9} {
			if p.PVE != "" && p.PVE != map[int]string{8: "8", 9: "9"}[v] {
				continue
			}
			for _, priv := range p.Privs {
				require.Contains(t, validPrivileges(v), priv, "PVE %d has no privilege %s", v, priv)
			}
		}
	}
}

func TestRoleFollowsTheVersionsGuestAgentAndMonitorPrivileges(t *testing.T) {
	opts := RoleOptions{Storages: []string{"local-lvm"}, Bridges: []string{"vmbr0"}}
	nine := Role(9, opts)
	require.Subset(t, nine["/vms"], []string{"VM.GuestAgent.Audit", "Sys.Audit", "VM.Allocate", "VM.Clone", "VM.Config.HWType", "VM.PowerMgmt"})
	require.NotContains(t, nine["/vms"], "VM.Monitor")
	eight := Role(8, opts)
	require.Contains(t, eight["/vms"], "VM.Monitor")
	require.NotContains(t, eight["/vms"], "VM.GuestAgent.Audit")
	require.NotContains(t, eight["/vms"], "Sys.Audit")
	for _, role := range []map[string][]string{nine, eight} {
		require.Equal(t, []string{"Sys.Audit"}, role["/"], "listing PCI devices: Sys.Audit on /, not /nodes")
		require.NotContains(t, role, "/nodes")
		require.Equal(t, []string{"Datastore.AllocateSpace"}, role["/storage/local-lvm"])
		require.Equal(t, []string{"SDN.Use"}, role["/sdn/zones/localnetwork/vmbr0"])
		require.Equal(t, []string{"Mapping.Audit", "Mapping.Use"}, role["/mapping/pci"])
		for path, privs := range role {
			require.True(t, slices.IsSorted(privs), path)
			require.Equal(t, len(slices.Compact(slices.Clone(privs))), len(privs), path)
		}
	}
}

func TestRoleAddsMappingModifyOnlyForMappings(t *testing.T) {
	role := Role(9, RoleOptions{Mappings: true})
	require.Equal(t, []string{"Mapping.Audit", "Mapping.Modify", "Mapping.Use"}, role["/mapping/pci"])
	require.Len(t, role, 3, "no storage or bridge asked for: /, /vms and /mapping/pci only")
}

func TestRoleHasAnACLPerStorageAndBridge(t *testing.T) {
	role := Role(9, RoleOptions{Storages: []string{"local-lvm", "ceph"}, Bridges: []string{"vmbr0", "vmbr1"}})
	for _, path := range []string{"/storage/local-lvm", "/storage/ceph", "/sdn/zones/localnetwork/vmbr0", "/sdn/zones/localnetwork/vmbr1"} {
		require.Contains(t, role, path)
	}
	for path := range role {
		require.NotContains(t, path, "<")
	}
}

func TestPveumCommandsGiveEachACLToTheUserAndTheToken(t *testing.T) {
	cmds := PveumCommands(9, "terraform@pve", "gpu", RoleOptions{Storages: []string{"local-lvm", "ceph"}, Bridges: []string{"vmbr0"}, Mappings: true})
	require.Equal(t, "pveum user add terraform@pve", cmds[0])
	require.Equal(t, "pveum user token add terraform@pve gpu --privsep 1", cmds[1])
	require.Contains(t, cmds, "pveum acl modify / --roles TerraformGPU-Sys --users terraform@pve --tokens 'terraform@pve!gpu' --propagate 0")
	require.Contains(t, cmds, "pveum role add TerraformGPU-Mapping --privs Mapping.Audit,Mapping.Modify,Mapping.Use")
	require.Contains(t, cmds, "pveum acl modify /storage/ceph --roles TerraformGPU-Storage --users terraform@pve --tokens 'terraform@pve!gpu'")
	var roles, acls int
	for _, c := range cmds {
		switch {
		case strings.HasPrefix(c, "pveum role add "):
			roles++
		case strings.HasPrefix(c, "pveum acl modify "):
			acls++
		}
	}
	require.Equal(t, 5, roles, "one role per kind of path: %q", cmds)
	require.Equal(t, 6, acls, "/, /vms, two storages, one bridge, /mapping/pci: %q", cmds)
	require.Equal(t, cmds, PveumCommands(9, "terraform@pve", "gpu", RoleOptions{Storages: []string{"local-lvm", "ceph"}, Bridges: []string{"vmbr0"}, Mappings: true}), "the same every time")
}

// The testbed's token terraform@pve!role has exactly the documented role
// (PVE 9, the testbed's storage and bridge, gpu_pci_mapping included): what
// PVE answers on /access/permissions for each of the role's paths is the
// role's privileges, no fewer (the docs would promise what the token cannot
// do) and no more (the tests that pass with the token would not show that
// the documented role suffices).
func TestTestbedTokenHasTheDocumentedRole(t *testing.T) {
	client := tokenClient(t)
	role := Role(9, RoleOptions{Storages: []string{pveemu.Storage}, Bridges: []string{pveemu.Bridge}, Mappings: true})
	for path, want := range role {
		got, err := client.Permissions(testCtx(t), path)
		require.NoError(t, err)
		var have []string
		for priv := range got {
			have = append(have, priv)
		}
		want = slices.Clone(want)
		slices.Sort(want)
		slices.Sort(have)
		require.Equal(t, want, have, "privileges of %s on %s", pveemu.RoleTokenID, path)
	}
}

func TestGrantCommandNamesATokensUserToo(t *testing.T) {
	token := Identity{User: "terraform@pve", TokenID: "gpu", IsToken: true}
	require.Equal(t, "pveum acl modify /mapping/pci --users terraform@pve --tokens 'terraform@pve!gpu' --roles PVEMappingAdmin",
		GrantCommand(token, "/mapping/pci", "PVEMappingAdmin"))
	require.Equal(t, "pveum acl modify /mapping/pci/a --users gpu@pve --roles PVEMappingUser",
		GrantCommand(Identity{User: "gpu@pve"}, "/mapping/pci/a", "PVEMappingUser"))
}

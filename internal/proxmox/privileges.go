package proxmox

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the one home of which privileges, on which ACL paths, the
// provider's Proxmox VE operations need: the documented `pveum` commands
// (templates/guides/proxmox.md.tmpl, checked by a test) and the testbed
// token's ACL are built from it. Each entry names the PVE source that checks
// it, read at qemu-server 9.2.6 (master e6352be) and 8.4.10 (stable-bookworm
// 5ccd363), pve-manager 9.x (master 14a22df) and 8.4.21 (stable-8 2606ac85),
// pve-guest-common master 4a8f6cb and pve-access-control master 5ccd07d.
//
// Two things PVE does decide how the ACL is written:
//   - A privilege-separated token's privileges are the intersection of its own
//     ACL and its user's (pve-access-control src/PVE/RPCEnvironment.pm,
//     $compile_acl_path, "intersect user and token permissions"): every ACL is
//     given to the user and to the token.
//   - The VM ID, template, mapping and VLAN tag are not known in advance, so
//     the ACL is set on the parent (/vms, /mapping/pci, the bridge) and
//     propagates; Sys.Audit on / is given without propagation (PropagateACL).

// Privilege is one (path, privileges) pair that PVE checks for an operation of
// the provider.
type Privilege struct {
	// Path is the ACL path as pveum takes it; "<storage>" and "<bridge>" stand
	// for each storage and bridge used (RoleOptions).
	Path   string
	Privs  []string
	Why    string // the provider's operation and the PVE check, in a reader's words
	Source string // PVE repository, file and sub that checks it
	PVE    string // "8", "9" or "" for both
	// Mappings marks what only gpu_pci_mapping needs (RoleOptions.Mappings).
	Mappings bool
}

// Placeholders in Privilege.Path.
const (
	storagePath = "/storage/<storage>"
	bridgePath  = "/sdn/zones/localnetwork/<bridge>"
)

// Privileges lists what the provider's operations need, in the order the docs
// give them.
var Privileges = []Privilege{
	{
		Path: "/", Privs: []string{"Sys.Audit"},
		Why: "list a node's PCI devices and a device's mdev (vGPU) types: gpu_inventory source \"proxmox\", " +
			"gpu_passthrough_vm's plan-time checks, gpu_pci_mapping's select and device blocks (Sys.Audit or Sys.Modify on /)",
		Source: "pve-manager PVE/API2/Hardware/PCI.pm, pci_scan and mdevscan: ['perm', '/', ['Sys.Audit', 'Sys.Modify'], any => 1]",
	},
	{
		Path: "/vms", Privs: []string{"VM.Audit"},
		Why: "read a VM's configuration and status; see the cluster's VMs (GET /cluster/resources lists only those with VM.Audit): " +
			"the template to clone, which VMs hold a mapping's devices",
		Source: "qemu-server src/PVE/API2/Qemu.pm, vm_config and vm_status: ['perm', '/vms/{vmid}', ['VM.Audit']]; " +
			"pve-manager PVE/API2/Cluster.pm, resources: check /vms/$vmid VM.Audit",
	},
	{
		Path: "/vms", Privs: []string{"VM.Allocate"},
		Why: "create a VM (on /vms/<vmid>, or on /pool/<pool>), clone to a new VM ID (on /vms/<newid>) and destroy a VM; " +
			"GET /cluster/nextid itself needs no privilege",
		Source: "qemu-server src/PVE/API2/Qemu.pm, create_vm (check /vms/$vmid VM.Allocate, else /pool/$pool), " +
			"clone_vm (['perm', '/vms/{newid}', ['VM.Allocate']]), destroy_vm (['perm', '/vms/{vmid}', ['VM.Allocate']]); " +
			"pve-manager PVE/API2/Cluster.pm, nextid: user => 'all'",
	},
	{
		Path: "/vms", Privs: []string{"VM.Clone"},
		Why:    "clone a template (clone blocks): VM.Clone on the template's /vms/<vmid>",
		Source: "qemu-server src/PVE/API2/Qemu.pm, clone_vm: ['perm', '/vms/{vmid}', ['VM.Clone']]",
	},
	{
		Path: "/vms", Privs: []string{"VM.Config.CPU", "VM.Config.Memory", "VM.Config.Options"},
		Why: "set cores, sockets, cpu (VM.Config.CPU); memory, balloon (VM.Config.Memory); name, agent, bios, onboot " +
			"and tags (VM.Config.Options; a tag new to the cluster also needs Sys.Modify on / unless the datacenter's " +
			"user-tag-access allows free tags, its default)",
		Source: "qemu-server src/PVE/API2/Qemu.pm, $check_vm_modify_config_perm ($cpuoptions, $memoryoptions, $generaloptions); " +
			"pve-guest-common src/PVE/GuestHelpers.pm, assert_tag_permissions",
	},
	{
		Path: "/vms", Privs: []string{"VM.Config.HWType"},
		Why: "set machine, and each hostpciN with a mapping (raw host addresses are root@pam's only: " +
			"\"only root can set 'hostpciN' config for non-mapped devices\")",
		Source: "qemu-server src/PVE/API2/Qemu.pm, $check_vm_modify_config_perm ($hwtypeoptions) and check_hostpci_perm",
	},
	{
		Path: "/vms", Privs: []string{"VM.Config.Network"},
		Why:    "set netN (the bridge also needs SDN.Use)",
		Source: "qemu-server src/PVE/API2/Qemu.pm, $check_vm_modify_config_perm: /^net\\d+$/ -> VM.Config.Network",
	},
	{
		Path: "/vms", Privs: []string{"VM.Config.Cloudinit", "VM.Config.CDROM"},
		Why: "set ciuser, sshkeys, ipconfigN and cicustom (VM.Config.Cloudinit, or VM.Config.Network); add the " +
			"cloud-init drive (VM.Config.Cloudinit and VM.Config.CDROM; its storage needs no Datastore privilege). " +
			"A cicustom snippet's storage is not checked either",
		Source: "qemu-server src/PVE/API2/Qemu.pm, $check_vm_modify_config_perm ($cloudinitoptions, any of Cloudinit, Network) " +
			"and update_vm's $check_drive_perms (drive_is_cloudinit); $check_storage_access skips 'cloudinit' volumes",
	},
	{
		Path: "/vms", Privs: []string{"VM.Config.Disk"},
		Why:    "add disks and efidisk0",
		Source: "qemu-server src/PVE/API2/Qemu.pm, update_vm's $check_drive_perms",
	},
	{
		Path: "/vms", Privs: []string{"VM.PowerMgmt"},
		Why:    "start and stop a VM (stopped before it is destroyed, or for a change PVE applies only to a stopped VM)",
		Source: "qemu-server src/PVE/API2/Qemu.pm, vm_start and vm_stop: ['perm', '/vms/{vmid}', ['VM.PowerMgmt']]",
	},
	{
		Path: "/vms", Privs: []string{"VM.GuestAgent.Audit"}, PVE: "9",
		Why: "read the guest's addresses (ipv4) from the QEMU guest agent: network-get-interfaces " +
			"(VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted)",
		Source: "qemu-server src/PVE/API2/Qemu/Agent.pm, $guest_agent_commands 'network-get-interfaces' perms => 'VM.GuestAgent.Audit', " +
			"register_command: [$perm, 'VM.GuestAgent.Unrestricted'], any => 1",
	},
	{
		Path: "/vms", Privs: []string{"Sys.Audit"}, PVE: "9",
		Why: "read which device of a mapping a running VM got: QEMU monitor \"info qtree\" (Sys.Audit or Sys.Modify on the " +
			"VM; 'info' needs nothing more)",
		Source: "qemu-server src/PVE/API2/Qemu.pm, monitor: ['perm', '/vms/{vmid}', ['Sys.Audit', 'Sys.Modify'], any => 1]; " +
			"src/PVE/API2/Qemu/HMPPerms.pm: info => 'none'",
	},
	{
		Path: "/vms", Privs: []string{"VM.Monitor"}, PVE: "8",
		Why: "read the guest's addresses (ipv4) from the QEMU guest agent, and which device of a mapping a running VM got " +
			"(QEMU monitor \"info qtree\", read-only: no Sys.Modify)",
		Source: "qemu-server (8.4) src/PVE/API2/Qemu/Agent.pm: commands without perms default to VM.Monitor; " +
			"src/PVE/API2/Qemu.pm, monitor: ['perm', '/vms/{vmid}', ['VM.Monitor']], Sys.Modify on / only when not $is_ro",
	},
	{
		Path: storagePath, Privs: []string{"Datastore.AllocateSpace"},
		Why: "allocate disks and efidisk0 on a storage, and the disks of a clone (on the template's storages: the " +
			"provider clones without a target storage)",
		Source: "qemu-server src/PVE/API2/Qemu.pm, $check_storage_access (NEW_DISK_RE: /storage/$storeid) and " +
			"$check_storage_access_clone",
	},
	{
		Path: bridgePath, Privs: []string{"SDN.Use"},
		Why: "attach netN to a Linux bridge (a bridge outside SDN is in zone localnetwork; with a VLAN tag the check is on " +
			"<bridge>/<tag>, which the bridge's ACL covers by propagation); a clone checks the template's bridges too",
		Source: "qemu-server src/PVE/QemuServer.pm, check_bridge_access; pve-guest-common src/PVE/GuestHelpers.pm, " +
			"check_vnet_access: /sdn/zones/$zone/$vnet[/$tag] SDN.Use",
	},
	{
		Path: "/mapping/pci", Privs: []string{"Mapping.Audit"},
		Why: "list the cluster's PCI mappings (an entry shows only with Mapping.Audit, Use or Modify on /mapping/pci/<id>): " +
			"the plan-time checks look at every mapping",
		Source: "pve-manager PVE/API2/Cluster/Mapping/PCI.pm, index: check_any /mapping/pci/$id " +
			"['Mapping.Modify', 'Mapping.Use', 'Mapping.Audit']; get: the same on /mapping/pci/{id}",
	},
	{
		Path: "/mapping/pci", Privs: []string{"Mapping.Use"},
		Why:    "pass a mapped device through (hostpciN mapping=<id>), and clone a template that has one",
		Source: "qemu-server src/PVE/API2/Qemu.pm, check_hostpci_perm; src/PVE/QemuServer.pm, check_mapping_access: /mapping/pci/$id Mapping.Use",
	},
	{
		Path: "/mapping/pci", Privs: []string{"Mapping.Modify"}, Mappings: true,
		Why:    "gpu_pci_mapping: create and delete a mapping (on /mapping/pci), update one (on /mapping/pci/<id>)",
		Source: "pve-manager PVE/API2/Cluster/Mapping/PCI.pm, create and delete: ['perm', '/mapping/pci', ['Mapping.Modify']]; update: ['perm', '/mapping/pci/{id}', ['Mapping.Modify']]",
	},
}

// RoleOptions says what a role is for.
type RoleOptions struct {
	Storages []string // storages that disks, efidisk0 and the clone templates' disks are on
	Bridges  []string // Linux bridges of the VMs' and templates' netN
	Mappings bool     // also Mapping.Modify, for gpu_pci_mapping
}

// Role returns the privileges a privilege-separated API token needs for the given PVE major version,
// bridges and storages used, grouped for `pveum` (path -> privileges, paths as pveum takes them).
// Every path's ACL propagates except "/" (PropagateACL).
func Role(pveMajor int, opts RoleOptions) map[string][]string {
	version := fmt.Sprint(pveMajor)
	role := map[string][]string{}
	for _, p := range Privileges {
		if (p.PVE != "" && p.PVE != version) || (p.Mappings && !opts.Mappings) {
			continue
		}
		for _, path := range expandPath(p.Path, opts) {
			role[path] = append(role[path], p.Privs...)
		}
	}
	for path, privs := range role {
		slices.Sort(privs)
		role[path] = slices.Compact(privs)
	}
	return role
}

// PropagateACL says whether the ACL on path (a key of Role's answer) is set to
// propagate: all but "/", where Sys.Audit is needed on the root alone.
func PropagateACL(path string) bool { return path != "/" }

func expandPath(path string, opts RoleOptions) []string {
	var names []string
	switch path {
	case storagePath:
		names = opts.Storages
	case bridgePath:
		names = opts.Bridges
	default:
		return []string{path}
	}
	placeholder := path[strings.LastIndex(path, "/")+1:]
	var out []string
	for _, n := range names {
		out = append(out, strings.Replace(path, placeholder, n, 1))
	}
	return out
}

// roleName is the name of the role PveumCommands makes for an ACL path.
func roleName(path string) string {
	switch {
	case path == "/":
		return "TerraformGPU-Sys"
	case path == "/vms":
		return "TerraformGPU-VM"
	case strings.HasPrefix(path, "/storage/"):
		return "TerraformGPU-Storage"
	case strings.HasPrefix(path, "/sdn/"):
		return "TerraformGPU-Network"
	case strings.HasPrefix(path, "/mapping/"):
		return "TerraformGPU-Mapping"
	}
	return "TerraformGPU" + strings.ReplaceAll(path, "/", "-")
}

// PveumCommands are the commands, run as root on a PVE node, that make user
// (e.g. "terraform@pve"), its privilege-separated API token named token
// (e.g. "gpu") and the roles and ACLs of Role(pveMajor, opts), given to both the
// user and the token: one role per kind of path, and `pveum user token add`
// prints the token's secret once.
func PveumCommands(pveMajor int, user, token string, opts RoleOptions) []string {
	role := Role(pveMajor, opts)
	paths := make([]string, 0, len(role))
	for path := range role {
		paths = append(paths, path)
	}
	slices.SortFunc(paths, func(a, b string) int { return strings.Compare(pathOrder(a), pathOrder(b)) })
	tokenID := user + "!" + token
	cmds := []string{
		"pveum user add " + user,
		"pveum user token add " + user + " " + token + " --privsep 1",
	}
	made := map[string]bool{}
	for _, path := range paths {
		name := roleName(path)
		if !made[name] {
			made[name] = true
			cmds = append(cmds, "pveum role add "+name+" --privs "+strings.Join(role[path], ","))
		}
	}
	for _, path := range paths {
		cmd := "pveum acl modify " + path + " --roles " + roleName(path) + " --users " + user + " --tokens '" + tokenID + "'"
		if !PropagateACL(path) {
			cmd += " --propagate 0"
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// pathOrder sorts ACL paths as Privileges lists them.
func pathOrder(path string) string {
	for i, p := range Privileges {
		if path == p.Path || (p.Path == storagePath && strings.HasPrefix(path, "/storage/")) ||
			(p.Path == bridgePath && strings.HasPrefix(path, "/sdn/")) {
			return fmt.Sprintf("%03d%s", i, path)
		}
	}
	return "999" + path
}

// GrantCommand is the `pveum acl modify` command that gives who the
// built-in role on path. A privilege-separated token has only what both
// it and its user hold, so a token's grant names its user too.
func GrantCommand(who Identity, path, role string) string {
	if who.IsToken {
		return fmt.Sprintf("pveum acl modify %s --users %s --tokens '%s' --roles %s", path, who.User, who.String(), role)
	}
	return fmt.Sprintf("pveum acl modify %s --users %s --roles %s", path, who.User, role)
}

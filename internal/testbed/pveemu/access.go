package pveemu

import (
	"maps"
	"slices"
	"strings"
)

// UseOnlyTokenID is privilege-separated like TokenID, but may only use
// and audit mappings on /mapping/pci (no Mapping.Modify): PVE lets it pass
// a GPU through by mapping and refuses it creating or changing mappings.
const (
	UseOnlyTokenID     = "terraform@pve!use-only"
	UseOnlyTokenSecret = "9d2e7c41-0b5a-4f3e-8c16-a47d3e92b0c5"
)

// AuditTokenID is privilege-separated with VM.Audit on /vms only: it may
// list and read VMs, and PVE refuses it everything else (users, storage
// content, the guest agent, hardware, other users' tasks).
const (
	AuditTokenID     = "terraform@pve!audit"
	AuditTokenSecret = "2f6b8e13-7d4c-4a90-b1e5-c83a0d6f2e47"
)

// The users of user.cfg (pve-access-control's parse_user_config): root@pam,
// whose password logs in (POST /access/ticket), and terraform@pve, which
// owns the privilege-separated tokens and has no password.
type pveUser struct {
	userid  string
	email   string
	comment string
}

var users = []pveUser{
	{userid: RootUser},
	{userid: "terraform@pve", comment: "GPU testbed: owns the API tokens terraform@pve!*"},
}

func findUser(userid string) *pveUser {
	for i := range users {
		if users[i].userid == userid {
			return &users[i]
		}
	}
	return nil
}

// realmTypes are domains.cfg's realms: what /access/users shows as
// "realm-type".
var realmTypes = map[string]string{"pam": "pam", "pve": "pve"}

// apiToken is one API token the emulator knows: a privilege-separated
// one (privsep) has the intersection of its own ACL and its user's
// privileges, the other its user's privileges.
type apiToken struct {
	secret  string
	privsep bool
	comment string
	// acl is the token's own ACL: path -> privileges, propagating.
	acl map[string][]string
}

var tokens = map[string]apiToken{
	TokenID:          {secret: TokenSecret, privsep: true, acl: tokenACL, comment: "gpu provider: the documented role"},
	NoMappingTokenID: {secret: NoMappingTokenSecret, privsep: true, acl: withMapping(tokenACL, nil), comment: "the documented role without /mapping/pci"},
	UseOnlyTokenID: {secret: UseOnlyTokenSecret, privsep: true, comment: "the documented role with Mapping.Audit and Mapping.Use only",
		acl: withMapping(tokenACL, []string{"Mapping.Audit", "Mapping.Use"})},
	AuditTokenID: {secret: AuditTokenSecret, privsep: true, comment: "VM.Audit on /vms only", acl: map[string][]string{"/vms": {"VM.Audit"}}},
	RootTokenID:  {secret: RootTokenSecret, privsep: false, comment: "root@pam without privilege separation"},
}

// withMapping is acl with other privileges on /mapping/pci (none: no entry).
func withMapping(acl map[string][]string, privs []string) map[string][]string {
	out := maps.Clone(acl)
	delete(out, "/mapping/pci")
	if len(privs) > 0 {
		out["/mapping/pci"] = privs
	}
	return out
}

// tokenACL is TokenID's ACL: path -> privileges, each propagating.
//
// TODO(privileges.go): build it from internal/proxmox/privileges.go, the
// documented role, once it lands (pveemu cannot import internal/proxmox:
// that package's tests import pveemu).
var tokenACL = map[string][]string{
	"/": {"Sys.Audit"},
	// Sys.Audit here too: ACLs on /vms replace the one on / below it
	// (AccessControl::roles), and the monitor's "info qtree" needs
	// Sys.Audit or Sys.Modify on /vms/{vmid} (qemu-server API2/Qemu.pm
	// 'monitor').
	"/vms": {"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit",
		"VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
		"VM.Console", "VM.GuestAgent.Audit", "VM.Migrate", "VM.PowerMgmt", "Sys.Audit"},
	"/storage":     {"Datastore.AllocateSpace", "Datastore.Audit"},
	"/mapping/pci": {"Mapping.Audit", "Mapping.Modify", "Mapping.Use"},
	"/sdn/zones":   {"SDN.Audit", "SDN.Use"},
}

// terraformProvRole is the role Telmate's provider documents for its user
// (terraform-provider-proxmox docs/index.md, the PVE 9 `pveum role add
// TerraformProv` line): terraform@pve has it on /, as a person following
// those docs gives it, which is what Telmate checks at configure
// (GET /access/permissions?userid=terraform@pve&path=/).
var terraformProvRole = []string{
	"Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit", "Pool.Allocate", "Pool.Audit",
	"Sys.Audit", "Sys.Console", "Sys.Modify", "VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM",
	"VM.Config.Cloudinit", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory",
	"VM.Config.Network", "VM.Config.Options", "VM.Migrate", "VM.PowerMgmt", "SDN.Use",
}

// aclEntry is one line of user.cfg's ACL: privileges (a role's) for a
// user or a token on a path, propagating.
type aclEntry struct {
	path  string
	ugid  string // "terraform@pve" or "terraform@pve!gpu"
	privs []string
}

// acl is the cluster's ACL: terraform@pve has TerraformProv on / and, on
// each deeper path of its tokens' ACLs, the union of their privileges
// there (an ACL on a deeper path replaces the one above, so without them
// the user, and so its privilege-separated tokens, would have only
// TerraformProv there); each token has its own ACL.
var acl = func() []aclEntry {
	out := []aclEntry{{path: "/", ugid: "terraform@pve", privs: terraformProvRole}}
	userPaths := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		t := tokens[id]
		for _, path := range slices.Sorted(maps.Keys(t.acl)) {
			out = append(out, aclEntry{path: path, ugid: id, privs: t.acl[path]})
			if path != "/" && strings.HasPrefix(id, "terraform@pve!") {
				userPaths[path] = append(userPaths[path], t.acl[path]...)
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(userPaths)) {
		privs := slices.Compact(slices.Sorted(slices.Values(userPaths[path])))
		out = append(out, aclEntry{path: path, ugid: "terraform@pve", privs: privs})
	}
	return out
}()

// aclPaths are the paths the ACL names.
func aclPaths() []string {
	var out []string
	for _, e := range acl {
		if !slices.Contains(out, e.path) {
			out = append(out, e.path)
		}
	}
	slices.Sort(out)
	return out
}

// aclPrivileges is AccessControl::roles for a user or a token's own ACL:
// walking from / to path, an ACL entry for ugid on a path replaces what
// the paths above gave (every entry here propagates).
func aclPrivileges(ugid, path string) map[string]bool {
	out := map[string]bool{}
	prefix := ""
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if path == "/" || path == "" {
		parts = nil
	}
	for i := -1; i < len(parts); i++ {
		at := "/"
		if i >= 0 {
			prefix += "/" + parts[i]
			at = prefix
		}
		var here map[string]bool
		for _, e := range acl {
			if e.ugid != ugid || e.path != at {
				continue
			}
			if here == nil {
				here = map[string]bool{}
			}
			for _, p := range e.privs {
				here[p] = true
			}
		}
		if here != nil {
			out = here
		}
	}
	return out
}

// permissionsOf is RPCEnvironment::permissions: root@pam has every
// privilege; a user its ACL's; a token without privilege separation its
// user's; a privilege-separated token those both it and its user have;
// anyone unknown none.
func permissionsOf(authid, path string) map[string]bool {
	if authid == RootUser {
		out := map[string]bool{}
		for _, p := range pve9Privileges {
			out[p] = true
		}
		return out
	}
	user, _, isToken := strings.Cut(authid, "!")
	if !isToken {
		if findUser(authid) == nil {
			return map[string]bool{}
		}
		return aclPrivileges(authid, path)
	}
	t, ok := tokens[authid]
	if !ok {
		return map[string]bool{}
	}
	userPrivs := permissionsOf(user, path)
	if !t.privsep {
		return userPrivs
	}
	out := map[string]bool{}
	for p := range aclPrivileges(authid, path) {
		if userPrivs[p] {
			out[p] = true
		}
	}
	return out
}

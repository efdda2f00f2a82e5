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

// PeersTokenID is the API token of terraform-prov@pve, set up as the
// docs of the other Proxmox Terraform providers give it: Telmate's
// TerraformProv role on / for the user (terraform-provider-proxmox
// docs/index.md, "Proxmox 9 and Newer"), which Telmate checks at configure,
// plus the built-in PVEMappingUser on /mapping/pci that a mapped GPU needs
// (Mapping.Use), and a token without privilege separation, so with its
// user's privileges (bpg's docs/index.md: `pveum user token add
// terraform@pve provider --privsep=0`).
const (
	PeersUser          = "terraform-prov@pve"
	PeersTokenID       = PeersUser + "!peers"
	PeersTokenSecret   = "6a0c9e52-3f17-4d8b-a2e4-5b91c7d03f68"
	terraformProvRole  = "TerraformProv"
	pveMappingUserRole = "PVEMappingUser"
)

// The users of user.cfg (pve-access-control's parse_user_config): root@pam,
// whose password logs in (POST /access/ticket), terraform@pve, which owns
// the privilege-separated tokens of this provider's documented setup, and
// terraform-prov@pve, the other providers' (PeersTokenID). None but root
// has a password.
type pveUser struct {
	userid  string
	email   string
	comment string
}

var users = []pveUser{
	{userid: RootUser},
	{userid: PeersUser, comment: "GPU testbed: bpg's and Telmate's documented setup"},
	{userid: "terraform@pve", comment: "GPU testbed: the gpu provider's documented setup"},
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
	// acl is the token's own ACL: path -> privileges, propagating but on
	// / (documentedPropagates).
	acl map[string][]string
}

var tokens = map[string]apiToken{
	TokenID:          {secret: TokenSecret, privsep: false, comment: "the testbed's token: terraform@pve's privileges"},
	RoleTokenID:      {secret: RoleTokenSecret, privsep: true, acl: tokenACL, comment: "gpu provider: exactly the documented role"},
	NoMappingTokenID: {secret: NoMappingTokenSecret, privsep: true, acl: withMapping(tokenACL, nil), comment: "the documented role without /mapping/pci"},
	UseOnlyTokenID: {secret: UseOnlyTokenSecret, privsep: true, comment: "the documented role with Mapping.Audit and Mapping.Use only",
		acl: withMapping(tokenACL, []string{"Mapping.Audit", "Mapping.Use"})},
	AuditTokenID: {secret: AuditTokenSecret, privsep: true, comment: "VM.Audit on /vms only", acl: map[string][]string{"/vms": {"VM.Audit"}}},
	RootTokenID:  {secret: RootTokenSecret, privsep: false, comment: "root@pam without privilege separation"},
	PeersTokenID: {secret: PeersTokenSecret, privsep: false, comment: "bpg's and Telmate's setup: the user's privileges"},
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

// tokenACL is the documented role, RoleTokenID's own ACL (and the base of
// the other privilege-separated tokens'): internal/proxmox/privileges.go
// Role(9, RoleOptions{Storages: local-lvm, Bridges: vmbr0, Mappings: true}),
// written out here because pveemu cannot import internal/proxmox (whose
// tests import pveemu); TestTokenACLIsTheDocumentedRole holds them equal.
var tokenACL = map[string][]string{
	"/": {"Sys.Audit"},
	"/vms": {"Sys.Audit", "VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit",
		"VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
		"VM.GuestAgent.Audit", "VM.PowerMgmt"},
	"/storage/" + Storage:               {"Datastore.AllocateSpace"},
	"/sdn/zones/localnetwork/" + Bridge: {"SDN.Use"},
	"/mapping/pci":                      {"Mapping.Audit", "Mapping.Modify", "Mapping.Use"},
}

// documentedPropagates is privileges.go's PropagateACL: every ACL of the
// documented setup propagates but the one on /, where Sys.Audit is given
// to / alone.
func documentedPropagates(path string) bool { return path != "/" }

// roles are the roles the ACL names beyond the documented one: Telmate's
// TerraformProv (its docs' PVE 9 `pveum role add`) and PVE's built-in
// PVEMappingUser (AccessControl.pm create_roles: Mapping's user and audit
// privileges).
var roles = map[string][]string{
	terraformProvRole: {"Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit", "Pool.Allocate", "Pool.Audit",
		"Sys.Audit", "Sys.Console", "Sys.Modify", "VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM",
		"VM.Config.Cloudinit", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory",
		"VM.Config.Network", "VM.Config.Options", "VM.Migrate", "VM.PowerMgmt", "SDN.Use"},
	pveMappingUserRole: {"Mapping.Use", "Mapping.Audit"},
}

// aclEntry is one line of user.cfg's ACL: privileges (a role's) for a
// user or a token on a path, and whether they propagate below it.
type aclEntry struct {
	path      string
	ugid      string // "terraform@pve" or "terraform@pve!gpu"
	privs     []string
	propagate bool
}

// userACL is terraform@pve's own ACL: Telmate's TerraformProv with the
// guest agent's audit privilege on / (propagating), and every mapping
// privilege on /mapping/pci. So TokenID (no privilege separation) serves
// this provider, bpg's (Datastore.Audit on a storage to read a volume
// back) and Telmate's (Sys.Audit on /access to list users at configure)
// alike, and each privilege-separated token of the user has what its own
// ACL gives (PVE intersects the two): RoleTokenID exactly the documented
// role.
var userACL = map[string][]string{
	"/":            append(slices.Clone(roles[terraformProvRole]), "VM.GuestAgent.Audit"),
	"/mapping/pci": {"Mapping.Audit", "Mapping.Modify", "Mapping.Use"},
}

// acl is the cluster's ACL: terraform@pve has userACL, each of its
// privilege-separated tokens its ACL as the documented pveum commands set
// it; terraform-prov@pve has TerraformProv on / and PVEMappingUser on
// /mapping/pci.
var acl = func() []aclEntry {
	var out []aclEntry
	for _, path := range slices.Sorted(maps.Keys(userACL)) {
		out = append(out, aclEntry{path: path, ugid: "terraform@pve", privs: userACL[path], propagate: true})
	}
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		t := tokens[id]
		for _, path := range slices.Sorted(maps.Keys(t.acl)) {
			out = append(out, aclEntry{path: path, ugid: id, privs: t.acl[path], propagate: documentedPropagates(path)})
		}
	}
	return append(out,
		aclEntry{path: "/", ugid: PeersUser, privs: roles[terraformProvRole], propagate: true},
		aclEntry{path: "/mapping/pci", ugid: PeersUser, privs: roles[pveMappingUserRole], propagate: true})
}()

// aclPaths are the paths of the ACL tree, as AccessControl.pm's
// iterate_acl_tree visits them: each path the ACL names and every path
// above it (/mapping for /mapping/pci).
func aclPaths() []string {
	var out []string
	for _, e := range acl {
		for path := e.path; ; path = parentPath(path) {
			if !slices.Contains(out, path) {
				out = append(out, path)
			}
			if path == "/" {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// parentPath is the ACL path above path ("/" above "/vms").
func parentPath(path string) string {
	i := strings.LastIndex(path, "/")
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// aclPrivileges is AccessControl::roles with RPCEnvironment's
// $compile_acl_path for a user or a token's own ACL: walking from / to
// path, the entries for ugid on each path that apply there (all on path
// itself, the propagating ones above it) replace what the paths above
// gave; each privilege maps to its propagate flag (1 if any of its
// entries propagates).
func aclPrivileges(ugid, path string) map[string]int {
	out := map[string]int{}
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
		final := i == len(parts)-1
		var here map[string]int
		for _, e := range acl {
			if e.ugid != ugid || e.path != at || (!final && !e.propagate) {
				continue
			}
			if here == nil {
				here = map[string]int{}
			}
			for _, p := range e.privs {
				if e.propagate {
					here[p] = 1
				} else if _, set := here[p]; !set {
					here[p] = 0
				}
			}
		}
		if here != nil {
			out = here
		}
	}
	return out
}

// permissionsOf is RPCEnvironment::permissions: privilege -> propagate
// flag. root@pam has every privilege; a user its ACL's; a token without
// privilege separation its user's; a privilege-separated token those both
// it and its user have (propagating if both do); anyone unknown none.
func permissionsOf(authid, path string) map[string]int {
	if authid == RootUser {
		out := map[string]int{}
		for _, p := range pve9Privileges {
			out[p] = 1
		}
		return out
	}
	user, _, isToken := strings.Cut(authid, "!")
	if !isToken {
		if findUser(authid) == nil {
			return map[string]int{}
		}
		return aclPrivileges(authid, path)
	}
	t, ok := tokens[authid]
	if !ok {
		return map[string]int{}
	}
	userPrivs := permissionsOf(user, path)
	if !t.privsep {
		return userPrivs
	}
	out := map[string]int{}
	for p, propagate := range aclPrivileges(authid, path) {
		if up, ok := userPrivs[p]; ok {
			out[p] = min(up, propagate)
		}
	}
	return out
}

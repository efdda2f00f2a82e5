package pveemu

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

var (
	auditTokenAuth   = auth{token: AuditTokenID + "=" + AuditTokenSecret}
	useOnlyTokenAuth = auth{token: UseOnlyTokenID + "=" + UseOnlyTokenSecret}
	peersTokenAuth   = auth{token: PeersTokenID + "=" + PeersTokenSecret}
)

func TestAccessUsers(t *testing.T) {
	t.Run("the user list: every user for Sys.Audit on /access/groups, tokens with full=1", func(t *testing.T) {
		var users []map[string]any
		ok(t, peersTokenAuth, "GET", "/access/users", nil, &users)
		byID := map[string]map[string]any{}
		for _, u := range users {
			byID[fmt.Sprint(u["userid"])] = u
		}
		tf, root := byID["terraform@pve"], byID[RootUser]
		if tf == nil || root == nil || byID[PeersUser] == nil || len(users) != 3 {
			t.Fatalf("want root@pam, terraform-prov@pve and terraform@pve: %v", users)
		}
		if tf["enable"] != float64(1) || tf["expire"] != float64(0) || tf["realm-type"] != "pve" || root["realm-type"] != "pam" {
			t.Fatalf("user fields: %v", users)
		}
		if _, has := tf["tokens"]; has {
			t.Fatalf("tokens without full=1: %v", tf)
		}
		ok(t, peersTokenAuth, "GET", "/access/users", url.Values{"full": {"1"}}, &users)
		var tokens []map[string]any
		for _, u := range users {
			if u["userid"] == "terraform@pve" {
				if u["groups"] != "" {
					t.Fatalf("groups (none, joined): %#v", u["groups"])
				}
				list, _ := u["tokens"].([]any)
				for _, tk := range list {
					m, _ := tk.(map[string]any)
					tokens = append(tokens, m)
				}
			}
		}
		var names []string
		for _, tk := range tokens {
			names = append(names, fmt.Sprint(tk["tokenid"]))
			// the testbed's token (gpu) has its user's privileges; the others are separated
			if want := map[bool]float64{true: 0, false: 1}[tk["tokenid"] == "gpu"]; tk["privsep"] != want || tk["expire"] != float64(0) {
				t.Fatalf("token %v", tk)
			}
		}
		if !slices.Equal(names, []string{"audit", "gpu", "no-mapping", "role", "use-only"}) {
			t.Fatalf("terraform@pve's tokens, sorted: %v", names)
		}
		ok(t, peersTokenAuth, "GET", "/access/users", url.Values{"enabled": {"0"}}, &users)
		if len(users) != 0 {
			t.Fatalf("enabled=0 lists enabled users: %v", users)
		}
	})
	t.Run("without Sys.Audit or User.Modify on /access/groups a token sees no user: not even its own", func(t *testing.T) {
		for _, a := range []auth{tokenAuth, auditTokenAuth} {
			var users []map[string]any
			ok(t, a, "GET", "/access/users", url.Values{"full": {"1"}}, &users)
			if len(users) != 0 {
				t.Fatalf("%s: want none (Sys.Audit on / alone does not reach /access/groups; a token's authid is no user's), got %v", a.token[:strings.Index(a.token, "=")], users)
			}
		}
	})
	t.Run("one user", func(t *testing.T) {
		var u map[string]any
		ok(t, peersTokenAuth, "GET", "/access/users/terraform@pve", nil, &u)
		tokens, _ := u["tokens"].(map[string]any)
		gpu, _ := tokens["gpu"].(map[string]any)
		role, _ := tokens["role"].(map[string]any)
		if gpu["privsep"] != float64(0) || role["privsep"] != float64(1) || len(tokens) != 5 || fmt.Sprint(u["groups"]) != "[]" || u["userid"] != nil {
			t.Fatalf("read_user: tokens by name, groups a list, no userid: %v", u)
		}
		var root map[string]any
		ok(t, peersTokenAuth, "GET", "/access/users/"+RootUser, nil, &root)
		if rt, _ := root["tokens"].(map[string]any)["gpu"].(map[string]any); rt["privsep"] != float64(0) {
			t.Fatalf("root@pam!gpu has no privilege separation: %v", root)
		}
		fails(t, peersTokenAuth, "GET", "/access/users/nobody@pve", nil, http.StatusInternalServerError, "no such user ('nobody@pve')")
		fails(t, tokenAuth, "GET", "/access/users/terraform@pve", nil, http.StatusForbidden, "Permission check failed")
	})
	t.Run("tokens: the user itself or User.Modify", func(t *testing.T) {
		root := ticketAuth(t)
		var list []map[string]any
		ok(t, root, "GET", "/access/users/terraform@pve/token", nil, &list)
		if len(list) != 5 || list[3]["tokenid"] != "role" || list[3]["privsep"] != float64(1) {
			t.Fatalf("token_index: %v", list)
		}
		var tk map[string]any
		ok(t, root, "GET", "/access/users/terraform@pve/token/use-only", nil, &tk)
		if tk["privsep"] != float64(1) || tk["expire"] != float64(0) || tk["tokenid"] != nil {
			t.Fatalf("read_token: %v", tk)
		}
		fails(t, root, "GET", "/access/users/terraform@pve/token/nope", nil, http.StatusInternalServerError, "no such token 'nope' for user 'terraform@pve'")
		fails(t, root, "GET", "/access/users/nobody@pve/token", nil, http.StatusInternalServerError, "no such user ('nobody@pve')")
		// a token is not its user, and Sys.Audit is not User.Modify
		ans := fails(t, tokenAuth, "GET", "/access/users/terraform@pve/token", nil, http.StatusForbidden, "Permission check failed")
		if ans.reason != "Permission check failed" {
			t.Fatalf("raise_perm_exc() names no path: %s", ans)
		}
		fails(t, tokenAuth, "GET", "/access/users/terraform@pve/token/gpu", nil, http.StatusForbidden, "Permission check failed")
	})
}

// telmateMinimum is what Telmate's provider checks at configure for the
// token's user on / (terraform-provider-proxmox proxmox/provider.go).
var telmateMinimum = []string{
	"Datastore.AllocateSpace", "Datastore.Audit", "Pool.Allocate", "Pool.Audit", "Sys.Audit", "Sys.Console", "Sys.Modify",
	"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Config.CPU", "VM.Config.Disk",
	"VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Migrate", "VM.PowerMgmt",
}

func TestPermissionsOfTokensAndTheirUser(t *testing.T) {
	perms := func(a auth, params url.Values) map[string]map[string]int {
		t.Helper()
		var out map[string]map[string]int
		ok(t, a, "GET", "/access/permissions", params, &out)
		return out
	}
	t.Run("the peers' token's user has what Telmate checks on /", func(t *testing.T) {
		user := perms(peersTokenAuth, url.Values{"userid": {PeersUser}, "path": {"/"}})
		for _, p := range telmateMinimum {
			if user["/"][p] != 1 {
				t.Errorf("%s lacks %s on /: %v", PeersUser, p, user)
			}
		}
		own := perms(peersTokenAuth, url.Values{"path": {"/mapping/pci/a6000-0"}})["/mapping/pci/a6000-0"]
		if own["Mapping.Use"] != 1 || own["Mapping.Modify"] == 1 || own["VM.Allocate"] == 1 {
			t.Fatalf("PeersTokenID (its user's privileges) on a mapping: PVEMappingUser replaces TerraformProv there: %v", own)
		}
	})
	t.Run("RoleTokenID has the documented role, / not propagating; TokenID its user's privileges", func(t *testing.T) {
		root := perms(tokenAuth, url.Values{"path": {"/"}})
		if len(root["/"]) != 1 || root["/"]["Sys.Audit"] != 0 {
			t.Fatalf("TokenID on /: Sys.Audit, not propagated (0): %v", root)
		}
		if nodes := perms(tokenAuth, url.Values{"path": {"/nodes/" + NodeA6000}}); len(nodes["/nodes/"+NodeA6000]) != 0 {
			t.Fatalf("Sys.Audit on / does not reach a node: %v", nodes)
		}
		vms := perms(tokenAuth, url.Values{"path": {"/vms/100"}})["/vms/100"]
		if vms["VM.GuestAgent.Audit"] != 1 || vms["Sys.Audit"] != 1 || vms["VM.Monitor"] == 1 || vms["Sys.Modify"] == 1 {
			t.Fatalf("TokenID on /vms/100: PVE 9's VM.GuestAgent.Audit, Sys.Audit for the monitor, no VM.Monitor (gone in 9), no Sys.Modify: %v", vms)
		}
		if bridge := perms(tokenAuth, url.Values{"path": {"/sdn/zones/localnetwork/" + Bridge + "/30"}}); bridge["/sdn/zones/localnetwork/"+Bridge+"/30"]["SDN.Use"] != 1 {
			t.Fatalf("SDN.Use on the bridge reaches its VLANs: %v", bridge)
		}
		mapping := perms(tokenAuth, url.Values{"path": {"/mapping/pci/a6000-0"}})["/mapping/pci/a6000-0"]
		useOnly := perms(useOnlyTokenAuth, url.Values{"path": {"/mapping/pci/a6000-0"}})["/mapping/pci/a6000-0"]
		noMapping := perms(auth{token: NoMappingTokenID + "=" + NoMappingTokenSecret}, url.Values{"path": {"/mapping/pci/a6000-0"}})
		if mapping["Mapping.Modify"] != 1 || useOnly["Mapping.Use"] != 1 || useOnly["Mapping.Modify"] == 1 || len(noMapping["/mapping/pci/a6000-0"]) != 0 {
			t.Fatalf("on a mapping: TokenID %v, UseOnlyTokenID %v, NoMappingTokenID %v", mapping, useOnly, noMapping)
		}
		user := perms(peersTokenAuth, url.Values{"userid": {"terraform@pve"}})
		unseparated := perms(auth{token: TokenID + "=" + TokenSecret}, nil)
		if fmt.Sprint(user) != fmt.Sprint(unseparated) {
			t.Fatalf("TokenID, without privilege separation, has its user's privileges: user %v, token %v", user, unseparated)
		}
		for path, privs := range perms(tokenAuth, nil) {
			for p := range privs {
				if _, ok := perms(peersTokenAuth, url.Values{"userid": {"terraform@pve"}, "path": {path}})[path][p]; !ok {
					t.Errorf("RoleTokenID has %s on %s, its user does not: PVE gives a separated token what both have", p, path)
				}
			}
		}
	})
	t.Run("without path: the default and ACL paths where there is any", func(t *testing.T) {
		all := perms(tokenAuth, nil)
		for _, path := range []string{"/", "/vms", "/storage/" + Storage, "/mapping/pci", "/sdn/zones/localnetwork/" + Bridge} {
			if len(all[path]) == 0 {
				t.Errorf("missing %s: %v", path, all)
			}
		}
		if _, has := all["/nodes"]; has {
			t.Errorf("/nodes has nothing: %v", all)
		}
		// iterate_acl_tree visits the paths above an ACL's path too: the
		// testbed's token inherits TerraformProv there from /.
		unseparated := perms(auth{token: TokenID + "=" + TokenSecret}, nil)
		for _, path := range []string{"/mapping", "/sdn/zones", "/sdn/zones/localnetwork"} {
			if unseparated[path]["VM.Audit"] != 1 {
				t.Errorf("TokenID's answer lacks %s, a path of the ACL tree: %v", path, unseparated)
			}
		}
		audit := perms(auditTokenAuth, nil)
		if len(audit) != 1 || audit["/vms"]["VM.Audit"] != 1 {
			t.Fatalf("AuditTokenID has VM.Audit on /vms only: %v", audit)
		}
	})
	t.Run("another user's needs Sys.Audit on /access; one's own tokens' does not", func(t *testing.T) {
		fails(t, tokenAuth, "GET", "/access/permissions", url.Values{"userid": {"terraform@pve"}}, http.StatusForbidden, "Permission check failed (/access, Sys.Audit)")
		fails(t, auditTokenAuth, "GET", "/access/permissions", url.Values{"userid": {"terraform@pve!"}}, http.StatusBadRequest, "Parameter verification failed.")
		root := perms(ticketAuth(t), url.Values{"userid": {RootTokenID}, "path": {"/"}})
		if root["/"]["Sys.PowerMgmt"] != 1 || root["/"]["Permissions.Modify"] != 1 {
			t.Fatalf("root@pam!gpu (no privilege separation) has root's privileges: %v", root)
		}
	})
}

func TestTaskUserAndTokenID(t *testing.T) {
	vmid := freeVMID(t)
	u := upid(t, tokenAuth, "POST", "/nodes/"+NodeCPU+"/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}, "name": {"task-user"}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(NodeCPU, vmid) })
	st, log := waitTask(t, tokenAuth, NodeCPU, u)
	mustSucceed(t, st, log)
	if st.User != "terraform@pve" || st.TokenID != "role" {
		t.Fatalf("a token's task: user %q tokenid %q, want terraform@pve and role", st.User, st.TokenID)
	}
	var list []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+NodeCPU+"/tasks", url.Values{"vmid": {fmt.Sprint(vmid)}}, &list)
	i := slices.IndexFunc(list, func(task map[string]any) bool { return task["upid"] == u })
	if i < 0 || list[i]["user"] != "terraform@pve" || list[i]["tokenid"] != "role" {
		t.Fatalf("the task list: %v", list)
	}
	root := ticketAuth(t)
	rootTask := upid(t, root, "POST", vmPath(NodeCPU, vmid)+"/config", url.Values{"description": {"root"}})
	st, _ = waitTask(t, root, NodeCPU, rootTask)
	if st.User != RootUser || st.TokenID != "" {
		t.Fatalf("root@pam's task: user %q tokenid %q", st.User, st.TokenID)
	}
	fails(t, auditTokenAuth, "GET", "/nodes/"+NodeCPU+"/tasks/"+url.PathEscape(rootTask)+"/status", nil, http.StatusForbidden, "Permission check failed (/nodes/"+NodeCPU+", Sys.Audit)")
	ans := fails(t, tokenAuth, "GET", "/nodes/"+NodeA6000+"/tasks/"+url.PathEscape(rootTask)+"/status", nil, http.StatusBadRequest, "Parameter verification failed.")
	if !strings.Contains(string(ans.env["errors"]), "no such task") {
		t.Fatalf("a task of another node: %s", ans)
	}
}

func TestStorageContent(t *testing.T) {
	vmid := createVM(t, tokenAuth, NodeCPU, url.Values{"name": {"volumes"}, "scsi0": {"file=" + Storage + ":8,format=raw,size=8589934592,discard=on"}})
	conf, _ := emu.VMConfig(NodeCPU, vmid)
	name := fmt.Sprintf("vm-%d-disk-0", vmid)
	if conf["scsi0"] != Storage+":"+name+",discard=on,size=8G" {
		t.Fatalf("the disk as qemu-server prints it: %q", conf["scsi0"])
	}
	want := map[string]any{"path": "/dev/pve/" + name, "size": float64(8 << 30), "used": float64(0), "format": "raw"}
	base := "/nodes/" + NodeCPU + "/storage/" + Storage + "/content"
	for _, volume := range []string{Storage + ":" + name, name} {
		var info map[string]any
		ok(t, peersTokenAuth, "GET", base+"/"+volume, nil, &info)
		if fmt.Sprint(info) != fmt.Sprint(want) {
			t.Fatalf("info %s: %v, want %v", volume, info, want)
		}
	}
	var list []map[string]any
	ok(t, peersTokenAuth, "GET", base, url.Values{"vmid": {fmt.Sprint(vmid)}}, &list)
	if len(list) != 1 || list[0]["volid"] != Storage+":"+name || list[0]["vmid"] != float64(vmid) || list[0]["content"] != "images" {
		t.Fatalf("content of vmid %d: %v", vmid, list)
	}
	ans := fails(t, tokenAuth, "GET", base+"/other:"+name, nil, http.StatusBadRequest, "Parameter verification failed.")
	if !strings.Contains(string(ans.env["errors"]), "storage ID mismatch (other != local-lvm)") {
		t.Fatalf("a volume of another storage: %s", ans)
	}
	fails(t, peersTokenAuth, "GET", base+"/vm-999999-disk-0", nil, http.StatusInternalServerError,
		`can't get size of '/dev/pve/vm-999999-disk-0':   Failed to find logical volume "pve/vm-999999-disk-0"`)
	// the documented role has Datastore.AllocateSpace, not Datastore.Audit:
	// its token lists nothing it may not read, and reads no volume
	fails(t, tokenAuth, "GET", base+"/"+name, nil, http.StatusForbidden, "Permission check failed (/storage/local-lvm, Datastore.Audit)")
	ok(t, tokenAuth, "GET", base, nil, &list)
	if len(list) != 0 {
		t.Fatalf("TokenID lists volumes it may not read: %v", list)
	}
	fails(t, auditTokenAuth, "GET", base, nil, http.StatusForbidden, "Permission check failed (/storage/local-lvm, Datastore.Audit|Datastore.AllocateSpace)")
}

func TestPVE9PrivilegeChecks(t *testing.T) {
	t.Run("the guest agent: VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted", func(t *testing.T) {
		vmid := createVM(t, tokenAuth, NodeCPU, url.Values{"name": {"agent"}, "agent": {"1"}, "net0": {"virtio,bridge=" + Bridge}})
		mustRun(t, tokenAuth, NodeCPU, "POST", vmPath(NodeCPU, vmid)+"/status/start", nil)
		t.Cleanup(func() { _ = emu.StopVMOutOfBand(NodeCPU, vmid) })
		ok(t, tokenAuth, "GET", vmPath(NodeCPU, vmid)+"/agent/network-get-interfaces", nil, nil)
		fails(t, auditTokenAuth, "GET", vmPath(NodeCPU, vmid)+"/agent/network-get-interfaces", nil, http.StatusForbidden,
			fmt.Sprintf("Permission check failed (/vms/%d, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)", vmid))
	})
	t.Run("PCI hardware: Sys.Audit or Sys.Modify on /", func(t *testing.T) {
		fails(t, auditTokenAuth, "GET", "/nodes/"+NodeA6000+"/hardware/pci", nil, http.StatusForbidden, "Permission check failed (/, Sys.Audit|Sys.Modify)")
	})
	t.Run("a NIC's bridge: SDN.Use on the bridge, its tag or each VLAN of its trunks", func(t *testing.T) {
		id := identity{authid: AuditTokenID}
		for net, path := range map[string]string{
			"virtio,bridge=vmbr0":                   "/sdn/zones/localnetwork/vmbr0",
			"virtio,bridge=vmbr0,tag=30":            "/sdn/zones/localnetwork/vmbr0/30",
			"virtio,bridge=vmbr0,trunks=20;10-11":   "/sdn/zones/localnetwork/vmbr0/10",
			"virtio=BC:24:11:00:00:01,bridge=vmbr1": "/sdn/zones/localnetwork/vmbr1",
		} {
			err := checkBridgeAccess(id, map[string]string{"net0": net, "name": "x"})
			if err == nil || err.msg != "Permission check failed ("+path+", SDN.Use)" {
				t.Errorf("%s: %v, want SDN.Use on %s", net, err, path)
			}
		}
		if err := checkBridgeAccess(identity{authid: TokenID}, map[string]string{"net0": "virtio,bridge=vmbr0,tag=30,trunks=40-41"}); err != nil {
			t.Errorf("TokenID has SDN.Use on /sdn/zones: %v", err)
		}
		if err := checkBridgeAccess(identity{authid: RootUser}, map[string]string{"net0": "virtio,bridge=vmbr9"}); err != nil {
			t.Errorf("root@pam is not checked: %v", err)
		}
	})
	t.Run("a new disk: Datastore.AllocateSpace on its storage, file= or not", func(t *testing.T) {
		for _, disk := range []string{"local-lvm:8", "file=local-lvm:8,format=raw"} {
			err := checkStorageAccess(identity{authid: AuditTokenID}, map[string]string{"scsi0": disk})
			if err == nil || err.msg != "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)" {
				t.Errorf("%s: %v", disk, err)
			}
		}
	})
	t.Run("create with start=1 starts in a qmstart task of its own", func(t *testing.T) {
		vmid := freeVMID(t)
		starts := func() []string {
			var list []map[string]any
			ok(t, tokenAuth, "GET", "/nodes/"+NodeCPU+"/tasks", url.Values{"vmid": {fmt.Sprint(vmid)}, "typefilter": {"qmstart"}, "source": {"all"}}, &list)
			var upids []string
			for _, task := range list {
				upids = append(upids, fmt.Sprint(task["upid"]))
			}
			return upids
		}
		before := starts() // an earlier test's VM may have had this VMID
		st, log := runTask(t, tokenAuth, NodeCPU, "POST", "/nodes/"+NodeCPU+"/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}, "start": {"1"}})
		t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(NodeCPU, vmid) })
		mustSucceed(t, st, log)
		if !slices.Contains(log, "Execute autostart") {
			t.Fatalf("create log: %q", log)
		}
		var started []string
		for _, u := range starts() {
			if !slices.Contains(before, u) {
				started = append(started, u)
			}
		}
		if len(started) != 1 {
			t.Fatalf("new qmstart tasks: %v", started)
		}
		st, log = waitTask(t, tokenAuth, NodeCPU, started[0])
		mustSucceed(t, st, log)
		if emu.VMStatus(NodeCPU, vmid) != "running" {
			t.Fatal("the autostart did not start the VM")
		}
		_ = emu.StopVMOutOfBand(NodeCPU, vmid)
	})
}

// TestTokenACLIsTheDocumentedRole holds RoleTokenID's ACL to
// the one home of the documented privileges, internal/proxmox's Role for
// PVE 9 with the testbed's storage and bridge, / given without propagation.
func TestTokenACLIsTheDocumentedRole(t *testing.T) {
	role := proxmox.Role(9, proxmox.RoleOptions{Storages: []string{Storage}, Bridges: []string{Bridge}, Mappings: true})
	if fmt.Sprint(role) != fmt.Sprint(tokenACL) {
		t.Fatalf("tokenACL %v\nthe documented role %v", tokenACL, role)
	}
	for path := range role {
		if proxmox.PropagateACL(path) != documentedPropagates(path) {
			t.Errorf("%s: propagates %v, the docs say %v", path, documentedPropagates(path), proxmox.PropagateACL(path))
		}
	}
}

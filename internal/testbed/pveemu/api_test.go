package pveemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func TestVersionNodesAndResources(t *testing.T) {
	var version map[string]any
	ok(t, tokenAuth, "GET", "/version", nil, &version)
	if version["version"] != Version || version["release"] != Release {
		t.Fatalf("version: %v", version)
	}

	var nodes []map[string]any
	ok(t, rootTokenAuth, "GET", "/nodes", nil, &nodes)
	names := map[string]bool{}
	for _, n := range nodes {
		names[fmt.Sprint(n["node"])] = true
		if n["status"] != "online" {
			t.Errorf("node %v is not online", n["node"])
		}
		if _, isNumber := n["maxcpu"].(float64); !isNumber {
			t.Errorf("node %v: maxcpu is not a JSON number: %#v", n["node"], n["maxcpu"])
		}
	}
	// the documented role has Sys.Audit on / alone: no node's details
	var bare []map[string]any
	ok(t, tokenAuth, "GET", "/nodes", nil, &bare)
	if len(bare) != len(nodes) || bare[0]["status"] != "online" || bare[0]["maxcpu"] != nil {
		t.Fatalf("GET /nodes without Sys.Audit on /nodes/<node>: %v", bare)
	}
	for _, want := range []string{NodeA6000, NodeH100, NodeL40S, NodeL40SB, NodeCPU} {
		if !names[want] {
			t.Errorf("GET /nodes lacks %s: %v", want, nodes)
		}
	}

	var resources []map[string]any
	ok(t, tokenAuth, "GET", "/cluster/resources", url.Values{"type": {"vm"}}, &resources)
	templates := 0
	for _, r := range resources {
		if r["type"] != "qemu" {
			t.Fatalf("type=vm listed %v", r)
		}
		if r["name"] == TemplateName && r["template"] == float64(1) {
			templates++
		}
		if _, isNumber := r["vmid"].(float64); !isNumber {
			t.Fatalf("vmid is not a JSON number: %#v", r["vmid"])
		}
	}
	if templates != len(Templates) {
		t.Fatalf("want the template on the %d GPU nodes, got %d: %v", len(Templates), templates, resources)
	}
	fails(t, tokenAuth, "GET", "/cluster/resources", url.Values{"type": {"bogus"}}, http.StatusBadRequest, "Parameter verification failed.")

	var next string
	ok(t, tokenAuth, "GET", "/cluster/nextid", nil, &next)
	if next != "100" {
		t.Fatalf("nextid: want \"100\" (a string, as PVE answers), got %q", next)
	}
	ans := fails(t, tokenAuth, "GET", "/cluster/nextid", url.Values{"vmid": {"9000"}}, http.StatusBadRequest, "Parameter verification failed.")
	var errs map[string]string
	if err := json.Unmarshal(ans.env["errors"], &errs); err != nil || errs["vmid"] != "VM 9000 already exists" {
		t.Fatalf("nextid vmid=9000: want errors.vmid, got %s", ans.body)
	}

	fails(t, tokenAuth, "GET", "/cluster/ha/resources/100", nil, http.StatusInternalServerError, "no such resource 'vm:100'")
	fails(t, tokenAuth, "GET", "/nodes/nope/qemu", nil, http.StatusInternalServerError, "hostname lookup 'nope' failed")
	fails(t, tokenAuth, "GET", "/nodes/pve-cpu/lxc", nil, http.StatusNotImplemented, "Method 'GET /nodes/pve-cpu/lxc' not implemented")
}

func TestAuthentication(t *testing.T) {
	t.Run("no credentials is 401 No ticket without a body", func(t *testing.T) {
		ans := fails(t, auth{}, "GET", "/version", nil, http.StatusUnauthorized, "No ticket")
		if len(ans.body) != 0 {
			t.Fatalf("want no body, got %s", ans.body)
		}
	})
	// pve-manager 9.1.5+ PVE/HTTPServer.pm auth_handler: one reason
	// phrase for every token or ticket that fails verification
	t.Run("a wrong token secret is 401 Authentication failed!", func(t *testing.T) {
		fails(t, auth{token: TokenID + "=00000000-0000-0000-0000-000000000000"}, "GET", "/version", nil, http.StatusUnauthorized, "Authentication failed!")
	})
	t.Run("an unknown token is 401 Authentication failed!", func(t *testing.T) {
		fails(t, auth{token: "terraform@pve!other=" + TokenSecret}, "GET", "/version", nil, http.StatusUnauthorized, "Authentication failed!")
		fails(t, auth{token: "nobody@pve!gpu=" + TokenSecret}, "GET", "/version", nil, http.StatusUnauthorized, "Authentication failed!")
	})
	t.Run("the token header may separate with a space", func(t *testing.T) {
		req, err := http.NewRequest("GET", emu.URL()+"/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "PVEAPIToken "+TokenID+"="+TokenSecret)
		resp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("want 200, got %s", resp.Status)
		}
	})
	t.Run("a wrong password is 401 authentication failure", func(t *testing.T) {
		fails(t, auth{}, "POST", "/access/ticket", url.Values{"username": {RootUser}, "password": {"wrong"}}, http.StatusUnauthorized, "authentication failure")
	})
	t.Run("a ticket reads without CSRF token and writes only with it", func(t *testing.T) {
		a := ticketAuth(t)
		ok(t, auth{ticket: a.ticket}, "GET", "/version", nil, nil)
		fails(t, auth{ticket: a.ticket}, "POST", "/nodes/pve-cpu/qemu", url.Values{"vmid": {"4242"}}, http.StatusUnauthorized, "Permission denied - invalid csrf token")
		fails(t, auth{ticket: a.ticket, csrf: "5F00AA00:forged"}, "POST", "/nodes/pve-cpu/qemu", url.Values{"vmid": {"4242"}}, http.StatusUnauthorized, "Permission denied - invalid csrf token")
		if emu.VMStatus(NodeCPU, 4242) != "" {
			t.Fatal("a refused create made a VM")
		}
		vmid := createVM(t, a, NodeCPU, url.Values{"name": {"ticket-vm"}})
		if emu.VMStatus(NodeCPU, vmid) != "stopped" {
			t.Fatal("the ticket's create made no VM")
		}
	})
	t.Run("a forged ticket is 401", func(t *testing.T) {
		fails(t, auth{ticket: "PVE:root@pam:5F00AA00::forged"}, "GET", "/version", nil, http.StatusUnauthorized, "Authentication failed!")
	})
}

func TestPermissions(t *testing.T) {
	var perms map[string]map[string]int
	ok(t, tokenAuth, "GET", "/access/permissions", url.Values{"path": {"/mapping/pci/a6000-0"}}, &perms)
	if perms["/mapping/pci/a6000-0"]["Mapping.Use"] != 1 {
		t.Fatalf("the token lacks Mapping.Use on its mapping: %v", perms)
	}
	ok(t, tokenAuth, "GET", "/access/permissions", url.Values{"path": {"/vms/100"}}, &perms)
	if perms["/vms/100"]["VM.Config.HWType"] != 1 || perms["/vms/100"]["Sys.Modify"] == 1 {
		t.Fatalf("the token's privileges on /vms/100: %v", perms)
	}
	ok(t, ticketAuth(t), "GET", "/access/permissions", nil, &perms)
	if perms["/"]["Sys.Modify"] != 1 || perms["/"]["Mapping.Use"] != 1 {
		t.Fatalf("root@pam's privileges on /: %v", perms)
	}
}

func TestHardwarePCIAndMappings(t *testing.T) {
	var pci []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+NodeA6000+"/hardware/pci", nil, &pci)
	byID := map[string]map[string]any{}
	for _, f := range pci {
		byID[fmt.Sprint(f["id"])] = f
	}
	gpu := byID["0000:01:00.0"]
	if gpu == nil || gpu["vendor"] != "0x10de" || gpu["device"] != "0x2230" || gpu["class"] != "0x030000" || gpu["iommugroup"] != float64(14) {
		t.Fatalf("0000:01:00.0 as listed: %v", gpu)
	}
	if audio := byID["0000:01:00.1"]; audio == nil || audio["iommugroup"] != float64(14) {
		t.Fatalf("the A6000's audio function is not in its IOMMU group: %v", audio)
	}
	if byID["0000:00:00.0"] != nil {
		t.Fatal("the host bridge (class 0x06) is listed despite the default pci-class-blacklist")
	}
	ok(t, tokenAuth, "GET", "/nodes/"+NodeA6000+"/hardware/pci", url.Values{"pci-class-blacklist": {""}}, &pci)
	if len(pci) != len(byID)+1 {
		t.Fatalf("an empty pci-class-blacklist lists %d functions, want %d", len(pci), len(byID)+1)
	}

	ok(t, tokenAuth, "GET", "/nodes/"+NodeH100+"/hardware/pci", nil, &pci)
	groups := map[any]any{}
	for _, f := range pci {
		groups[f["id"]] = f["iommugroup"]
	}
	if groups["0000:41:00.0"] != float64(30) || groups["0000:42:00.0"] != float64(30) {
		t.Fatalf("the H100 does not share IOMMU group 30 with the NIC: %v", groups)
	}

	ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/hardware/pci", nil, &pci)
	found := false
	for _, f := range pci {
		if f["id"] == "0000:c1:00.0" {
			found = f["mdev"] == float64(1)
		}
	}
	if !found {
		t.Fatalf("the L40S is not listed as mdev capable: %v", pci)
	}
	var types []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/hardware/pci/0000:c1:00.0/mdev", nil, &types)
	if len(types) != 3 || types[0]["type"] != "nvidia-1155" || types[0]["available"] != float64(4) {
		t.Fatalf("L40S mdev types: %v", types)
	}
	ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/hardware/pci/"+MappingL40SVGPU+"/mdev", nil, &types)
	if len(types) != 3 {
		t.Fatalf("mdev types by mapping: %v", types)
	}

	var mappings []struct {
		ID  string   `json:"id"`
		Map []string `json:"map"`
	}
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci", nil, &mappings)
	want := map[string]string{
		MappingA6000First:  "id=10de:2230,iommugroup=14,node=pve-a6000,path=0000:01:00,subsystem-id=10de:1459",
		MappingA6000Second: "id=10de:2230,iommugroup=15,node=pve-a6000,path=0000:02:00,subsystem-id=10de:1459",
		MappingL40SVGPU:    "id=10de:26b9,iommugroup=40,node=pve-l40s,path=0000:c1:00.0,subsystem-id=10de:1851",
	}
	for _, m := range mappings {
		if len(m.Map) != 1 || m.Map[0] != want[m.ID] {
			t.Errorf("mapping %v: map %v", m.ID, m.Map)
		}
		delete(want, m.ID)
	}
	if len(want) > 0 {
		t.Fatalf("mappings missing: %v", want)
	}

	fails(t, tokenAuth, "GET", "/nodes/"+NodeA6000+"/hardware/pci/0000:01:00.0/mdev/x", nil, http.StatusNotImplemented, "not implemented")
	if !strings.Contains(emu.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s is not loopback HTTPS", emu.URL())
	}
}

// TestSecretsStayOutOfTheLog makes calls with every credential, right and
// wrong, and reads the emulator's log: it names the calls, never a
// password, token secret, ticket or CSRF token.
func TestSecretsStayOutOfTheLog(t *testing.T) {
	// A testbed of its own, whose log is a file whatever
	// GPU_TESTBED_VERBOSE says.
	own := New(Options{})
	ownTB := testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{own}})
	local := emu
	emu = own
	t.Cleanup(func() { emu = local })
	a := ticketAuth(t)
	ok(t, a, "GET", "/version", nil, nil)
	ok(t, tokenAuth, "GET", "/nodes", nil, nil)
	ok(t, rootTokenAuth, "GET", "/cluster/resources", nil, nil)
	fails(t, auth{token: TokenID + "=not-the-secret-1234"}, "GET", "/version", nil, http.StatusUnauthorized, "Authentication failed!")
	fails(t, auth{}, "POST", "/access/ticket", url.Values{"username": {RootUser}, "password": {"not-the-password-1234"}}, http.StatusUnauthorized, "authentication failure")
	logFile := filepath.Join(ownTB.Dir(), "logs", "proxmox-emulator.log")
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("reading the emulator's log: %v", err)
	}
	log := string(raw)
	for _, want := range []string{"GET /version 200 (root@pam)", "GET /nodes 200 (terraform@pve!role)", "GET /version 401 Authentication failed! (authentication failure: invalid token value!)", "POST /access/ticket 401 authentication failure"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	for name, secret := range map[string]string{"the password": RootPassword, "the token secret": TokenSecret, "root's token secret": RootTokenSecret,
		"a wrong password": "not-the-password-1234", "a wrong secret": "not-the-secret-1234", "the ticket": a.ticket, "the CSRF token": a.csrf} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %s", name)
		}
	}
}

func TestListsAndIndexes(t *testing.T) {
	var vms []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+NodeH100+"/qemu", nil, &vms)
	if len(vms) != 1 || vms[0]["vmid"] != float64(Templates[NodeH100]) || vms[0]["template"] != float64(1) || vms[0]["status"] != "stopped" {
		t.Fatalf("VMs on %s: %v", NodeH100, vms)
	}
	ok(t, tokenAuth, "GET", "/nodes/"+NodeCPU+"/qemu", nil, &vms)
	if len(vms) != 0 {
		t.Fatalf("VMs on %s: %v", NodeCPU, vms)
	}

	var m map[string]any
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci/"+MappingL40SVGPU, nil, &m)
	if m["mdev"] != float64(1) || m["digest"] == nil {
		t.Fatalf("mapping %s: %v", MappingL40SVGPU, m)
	}
	fails(t, tokenAuth, "GET", "/cluster/mapping/pci/nope", nil, http.StatusInternalServerError, "mapping 'nope' not found")
	var checked []struct {
		ID     string           `json:"id"`
		Checks []map[string]any `json:"checks"`
	}
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci", url.Values{"check-node": {NodeH100}}, &checked)
	for _, c := range checked {
		if len(c.Checks) != 1 || c.Checks[0]["severity"] != "warning" {
			t.Errorf("mapping %s checked on %s (which it does not cover): %v", c.ID, NodeH100, c.Checks)
		}
	}

	var index []map[string]string
	ok(t, tokenAuth, "GET", "/nodes/"+NodeH100+"/qemu/"+fmt.Sprint(Templates[NodeH100])+"/status", nil, &index)
	if len(index) == 0 || index[0]["subdir"] != "current" {
		t.Fatalf("status index: %v", index)
	}
	vmid := freeVMID(t)
	u := upid(t, tokenAuth, "POST", "/nodes/"+NodeCPU+"/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(NodeCPU, vmid) })
	ok(t, tokenAuth, "GET", "/nodes/"+NodeCPU+"/tasks/"+url.PathEscape(u), nil, &index)
	if len(index) != 2 || index[0]["name"] != "log" {
		t.Fatalf("task index: %v", index)
	}
	st, log := waitTask(t, tokenAuth, NodeCPU, u)
	mustSucceed(t, st, log)
	fails(t, tokenAuth, "GET", "/nodes/"+NodeCPU+"/tasks/UPID:bogus/status", nil, http.StatusBadRequest, "Parameter verification failed.")
}

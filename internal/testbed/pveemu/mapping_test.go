package pveemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// l40sBEntry is a map line for one of pve-l40s-b's L40S.
func l40sBEntry(path string, group int) string {
	return fmt.Sprintf("node=%s,path=%s,id=10de:26b9,subsystem-id=10de:1851,iommugroup=%d", NodeL40SB, path, group)
}

// createMapping creates a mapping as root@pam (ticket) and deletes it
// when the test ends.
func createMapping(t *testing.T, root auth, id string, params url.Values, lines ...string) {
	t.Helper()
	p := url.Values{"id": {id}, "map": lines}
	for k, v := range params {
		p[k] = v
	}
	var data any
	ok(t, root, "POST", "/cluster/mapping/pci", p, &data)
	if data != nil {
		t.Fatalf("create answered %v, want null", data)
	}
	t.Cleanup(func() { call(t, root, "DELETE", "/cluster/mapping/pci/"+id, nil) })
}

// restoreHardware puts every node's hardware back as the profiles have it.
func restoreHardware(t *testing.T) {
	t.Cleanup(func() {
		emu.mu.Lock()
		emu.st.nodes = hostProfiles()
		emu.mu.Unlock()
	})
}

func errorsOf(t *testing.T, a answer) map[string]string {
	t.Helper()
	var errs map[string]string
	if err := json.Unmarshal(a.env["errors"], &errs); err != nil {
		t.Fatalf("no per-parameter errors: %s", a.body)
	}
	return errs
}

func TestMappingWrites(t *testing.T) {
	root := ticketAuth(t)
	pool := url.Values{"id": {"pool-w"}, "map": {l40sBEntry("0000:41:00.0", 50), l40sBEntry("0000:61:00.0", 51)},
		"mdev": {"1"}, "description": {"both L40S of pve-l40s-b"}}

	fails(t, useOnlyTokenAuth, "POST", "/cluster/mapping/pci", pool, http.StatusForbidden, "Permission check failed (/mapping/pci, Mapping.Modify)")
	createMapping(t, root, "pool-w", url.Values{"mdev": {"1"}, "description": {"both L40S of pve-l40s-b"}, "live-migration-capable": {"1"}},
		pool["map"]...)
	fails(t, root, "POST", "/cluster/mapping/pci", pool, http.StatusInternalServerError, "create hardware mapping failed: pci ID 'pool-w' already defined")
	if lines, found := emu.Mapping("pool-w"); !found || !slices.Equal(lines, pool["map"]) {
		t.Fatalf("Mapping: %v %v, want the lines as given", lines, found)
	}
	// the documented role (TokenID) has Mapping.Modify on /mapping/pci
	ok(t, tokenAuth, "POST", "/cluster/mapping/pci", url.Values{"id": {"by-token"}, "map": pool["map"][:1]}, nil)
	ok(t, tokenAuth, "DELETE", "/cluster/mapping/pci/by-token", nil, nil)

	t.Run("parameters are verified against PVE::Mapping::PCI's schema", func(t *testing.T) {
		bad := url.Values{"id": {"1x"}, "map": {"node=pve-l40s-b,path=41:00.0,id=10de:26b9", "node=pve-l40s-b,path=0000:41:00.0"}, "mdev": {"true"}}
		errs := errorsOf(t, fails(t, root, "POST", "/cluster/mapping/pci", bad, http.StatusBadRequest, "Parameter verification failed."))
		want := map[string]string{
			"id":     "invalid format - invalid configuration ID '1x'\n",
			"map[0]": "invalid format - format error\nmap[0].path: value does not match the regex pattern\n",
			"map[1]": "invalid format - format error\nmap[1].id: property is missing and it is not optional\n",
			"mdev":   "type check ('boolean') failed - got 'true'",
		}
		for k, v := range want {
			if errs[k] != v {
				t.Errorf("errors[%s] = %q, want %q", k, errs[k], v)
			}
		}
		errs = errorsOf(t, fails(t, root, "POST", "/cluster/mapping/pci", url.Values{"id": {"no-map"}}, http.StatusBadRequest, "Parameter verification failed."))
		if errs["map"] != "property is missing and it is not optional" {
			t.Fatalf("errors: %v", errs)
		}
	})

	var got map[string]any
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci/pool-w", nil, &got)
	digest, _ := got["digest"].(string)
	if len(digest) != 40 || got["type"] != "pci" || got["mdev"] != float64(1) || got["live-migration-capable"] != float64(1) ||
		got["description"] != "both L40S of pve-l40s-b" || fmt.Sprint(got["map"]) != fmt.Sprint(pool["map"]) {
		t.Fatalf("GET: %v", got)
	}

	update := url.Values{"map": pool["map"][:1], "delete": {"description"}, "digest": {digest}}
	fails(t, useOnlyTokenAuth, "PUT", "/cluster/mapping/pci/pool-w", update, http.StatusForbidden, "Permission check failed (/mapping/pci/pool-w, Mapping.Modify)")
	fails(t, root, "PUT", "/cluster/mapping/pci/pool-w", url.Values{"map": pool["map"], "digest": {strings.Repeat("0", 40)}},
		http.StatusInternalServerError, "update hardware mapping failed: detected modified configuration - file changed by other user? Try again.")
	fails(t, root, "PUT", "/cluster/mapping/pci/pool-w", url.Values{"description": {"no map"}},
		http.StatusInternalServerError, "update hardware mapping failed: missing value for required option 'map'")
	fails(t, root, "PUT", "/cluster/mapping/pci/pool-w", url.Values{"map": pool["map"], "delete": {"map"}},
		http.StatusInternalServerError, "update hardware mapping failed: unable to delete required option 'map'")
	fails(t, root, "PUT", "/cluster/mapping/pci/nope", url.Values{"map": pool["map"]},
		http.StatusInternalServerError, "update hardware mapping failed: pci ID 'nope' does not exist")
	ok(t, root, "PUT", "/cluster/mapping/pci/pool-w", update, nil)
	got = nil
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci/pool-w", nil, &got)
	if got["digest"] == digest || got["description"] != nil || fmt.Sprint(got["map"]) != fmt.Sprint(pool["map"][:1]) || got["mdev"] != float64(1) {
		t.Fatalf("after the update: %v", got)
	}

	var list []map[string]any
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci", url.Values{"check-node": {NodeL40SB}}, &list)
	checks := map[string]any{}
	for _, m := range list {
		checks[fmt.Sprint(m["id"])] = m["checks"]
		if m["digest"] != got["digest"] {
			t.Errorf("the list's digest %v is not the file's %v", m["digest"], got["digest"])
		}
	}
	if fmt.Sprint(checks["pool-w"]) != "[]" || fmt.Sprint(checks[MappingA6000First]) != "[map[message:No mapping for node pve-l40s-b. severity:warning]]" {
		t.Fatalf("check-node diagnostics: %v", checks)
	}

	fails(t, useOnlyTokenAuth, "DELETE", "/cluster/mapping/pci/pool-w", nil, http.StatusForbidden, "Permission check failed (/mapping/pci, Mapping.Modify)")
	ok(t, root, "DELETE", "/cluster/mapping/pci/pool-w", nil, nil)
	fails(t, tokenAuth, "GET", "/cluster/mapping/pci/pool-w", nil, http.StatusInternalServerError, "mapping 'pool-w' not found")
	ok(t, root, "DELETE", "/cluster/mapping/pci/pool-w", nil, nil)
	if _, found := emu.Mapping("pool-w"); found {
		t.Fatal("the mapping is still there")
	}
}

// startAnswer starts a VM and returns the task's exit status and log.
func startAnswer(t *testing.T, a auth, node string, vmid int) (string, []string) {
	t.Helper()
	st, log := runTask(t, a, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	return st.ExitStatus, log
}

// qtreeOf is the VM's "info qtree" through the monitor.
func qtreeOf(t *testing.T, a auth, node string, vmid int) string {
	t.Helper()
	var out string
	ok(t, a, "POST", vmPath(node, vmid)+"/monitor", url.Values{"command": {"info qtree"}}, &out)
	return out
}

// vfioHost is the host property of the vfio-pci device id in a qtree.
func vfioHost(qtree, id string) string {
	_, rest, found := strings.Cut(qtree, "dev: vfio-pci, id \""+id+"\"\r\n")
	if !found {
		return ""
	}
	_, rest, _ = strings.Cut(rest, "host = \"")
	host, _, _ := strings.Cut(rest, "\"")
	return host
}

func TestGPUPool(t *testing.T) {
	root := ticketAuth(t)
	createMapping(t, root, "pool-l40s", url.Values{"mdev": {"1"}}, l40sBEntry("0000:41:00.0", 50), l40sBEntry("0000:61:00.0", 51))
	node := NodeL40SB
	params := func(name string) url.Values { return gpuVM(name, "mapping=pool-l40s,pcie=1") }
	a := createVM(t, tokenAuth, node, params("pool-a"))
	b := createVM(t, tokenAuth, node, params("pool-b"))
	c := createVM(t, tokenAuth, node, params("pool-c"))

	var answer string
	ok(t, tokenAuth, "POST", vmPath(node, a)+"/monitor", url.Values{"command": {"info qtree"}}, &answer)
	if answer != fmt.Sprintf("ERROR: VM %d not running\n", a) {
		t.Fatalf("monitor of a stopped VM: %q", answer)
	}
	mustRun(t, tokenAuth, node, "POST", vmPath(node, a)+"/status/start", nil)
	mustRun(t, tokenAuth, node, "POST", vmPath(node, b)+"/status/start", nil)
	if ha, hb := vfioHost(qtreeOf(t, tokenAuth, node, a), "hostpci0"), vfioHost(qtreeOf(t, tokenAuth, node, b), "hostpci0"); ha != "0000:41:00.0" || hb != "0000:61:00.0" {
		t.Fatalf("the pool's devices: %s got %q, %s got %q", fmt.Sprint(a), ha, fmt.Sprint(b), hb)
	}
	if exit, log := startAnswer(t, tokenAuth, node, c); exit != "could not find a free device for 'hostpci0'" {
		t.Fatalf("the third start: %s %q", exit, log)
	}
	if err := emu.StopVMOutOfBand(node, a); err != nil {
		t.Fatal(err)
	}
	mustRun(t, tokenAuth, node, "POST", vmPath(node, c)+"/status/start", nil)
	if hc := vfioHost(qtreeOf(t, tokenAuth, node, c), "hostpci0"); hc != "0000:41:00.0" {
		t.Fatalf("the freed device went to %q", hc)
	}

	t.Run("monitor commands need what HMPPerms.pm asks", func(t *testing.T) {
		fails(t, tokenAuth, "POST", vmPath(node, c)+"/monitor", url.Values{"command": {"stop"}}, http.StatusForbidden, "Permission check failed (/, Sys.Modify)")
		fails(t, tokenAuth, "POST", vmPath(node, c)+"/monitor", url.Values{"command": {"device_add vfio-pci,host=0000:41:00.0"}},
			http.StatusInternalServerError, "root-only command 'device_add'")
		fails(t, tokenAuth, "POST", vmPath(node, c)+"/monitor", url.Values{"command": {"frobnicate"}},
			http.StatusInternalServerError, "command 'frobnicate' non-existent or not assigned a required permission yet, limiting to root user")
		errs := errorsOf(t, fails(t, tokenAuth, "POST", vmPath(node, c)+"/monitor", nil, http.StatusBadRequest, "Parameter verification failed."))
		if errs["command"] != "property is missing and it is not optional" {
			t.Fatalf("errors: %v", errs)
		}
		var out string
		ok(t, root, "POST", vmPath(node, c)+"/monitor", url.Values{"command": {"frobnicate"}}, &out)
		if out != "unknown command: 'frobnicate'\r\n" {
			t.Fatalf("root's unknown command: %q", out)
		}
	})

	t.Run("a mapping that does not mark the mdev-capable L40S as mdev fails assert_valid", func(t *testing.T) {
		createMapping(t, root, "pool-nomdev", nil, l40sBEntry("0000:41:00.0", 50))
		vmid := createVM(t, tokenAuth, node, gpuVM("nomdev", "mapping=pool-nomdev,pcie=1"))
		exit, _ := startAnswer(t, tokenAuth, node, vmid)
		if want := "PCI device mapping invalid (hardware probably changed): 'mdev' does not match for 'pool-nomdev' (1 != 0)"; exit != want {
			t.Fatalf("start: %q, want %q", exit, want)
		}
	})
}

func TestPoolDrift(t *testing.T) {
	root := ticketAuth(t)
	restoreHardware(t)
	createMapping(t, root, "pool-drift", url.Values{"mdev": {"1"}}, l40sBEntry("0000:41:00.0", 50), l40sBEntry("0000:61:00.0", 51))
	node := NodeL40SB
	vmid := createVM(t, tokenAuth, node, gpuVM("drift", "mapping=pool-drift,pcie=1"))

	// the move over HTTPS, as a detached testbed's tests make it
	base := strings.TrimSuffix(emu.URL(), apiPrefix)
	if err := testbed.CallControl(httpClient(t), base, "move-pci-device", controlArgs{Node: node, From: "0000:61:00", To: "0000:81:00"}, nil); err != nil {
		t.Fatal(err)
	}
	var pci []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+node+"/hardware/pci", nil, &pci)
	moved := false
	for _, f := range pci {
		moved = moved || (f["id"] == "0000:81:00.0" && f["iommugroup"] == float64(52) && f["device"] == "0x26b9")
		if f["id"] == "0000:61:00.0" {
			t.Fatalf("the moved card is still at its old address: %v", pci)
		}
	}
	if !moved {
		t.Fatalf("the moved card is not at 0000:81:00.0 in a new IOMMU group: %v", pci)
	}
	want := "PCI device mapping invalid (hardware probably changed): pci device '0000:61:00.0' not found"
	if exit, _ := startAnswer(t, tokenAuth, node, vmid); exit != want {
		t.Fatalf("start after the move: %q, want %q", exit, want)
	}
	var list []map[string]any
	ok(t, tokenAuth, "GET", "/cluster/mapping/pci", url.Values{"check-node": {node}}, &list)
	for _, m := range list {
		if m["id"] == "pool-drift" && fmt.Sprint(m["checks"]) != "[map[message:Invalid configuration: pci device '0000:61:00.0' not found\n severity:error]]" {
			t.Fatalf("check-node: %v", m["checks"])
		}
	}

	if err := emu.RemovePCIDevice(node, "0000:41:00"); err != nil {
		t.Fatal(err)
	}
	if err := emu.RemovePCIDevice(node, "0000:41:00"); err == nil {
		t.Fatal("removing a card twice succeeded")
	}
	var mapping struct {
		Entries []string `json:"entries"`
		Found   bool     `json:"found"`
	}
	if err := testbed.CallControl(httpClient(t), base, "mapping", controlArgs{ID: "pool-drift"}, &mapping); err != nil || !mapping.Found || len(mapping.Entries) != 2 {
		t.Fatalf("the mapping control over HTTPS: %v %+v", err, mapping)
	}
	want = "PCI device mapping invalid (hardware probably changed): pci device '0000:41:00.0' not found"
	if exit, _ := startAnswer(t, tokenAuth, node, vmid); exit != want {
		t.Fatalf("start after the removal: %q, want %q", exit, want)
	}

	// The pulled card goes back where the profile has it, in its own IOMMU group.
	if err := testbed.CallControl(httpClient(t), base, "restore-pci-device", controlArgs{Node: node, Address: "0000:41:00"}, nil); err != nil {
		t.Fatalf("restoring the card over HTTPS: %v", err)
	}
	if err := emu.RestorePCIDevice(node, "0000:61:00"); err != nil {
		t.Fatalf("a card moved back is restored to its profile's IOMMU group: %v", err)
	}
	if err := emu.RestorePCIDevice(node, "0000:99:00"); err == nil {
		t.Fatal("restoring a card the profile does not have succeeded")
	}
	ok(t, tokenAuth, "GET", "/nodes/"+node+"/hardware/pci", url.Values{"pci-class-blacklist": {""}}, &pci)
	restored := false
	for _, f := range pci {
		restored = restored || (f["id"] == "0000:41:00.0" && f["iommugroup"] == float64(50) && f["device"] == "0x26b9")
		if f["id"] == "0000:61:00.0" && f["iommugroup"] != float64(51) {
			t.Fatalf("the card moved back and restored is in IOMMU group %v, want 51", f["iommugroup"])
		}
	}
	if !restored {
		t.Fatalf("the restored card is not at 0000:41:00.0 in IOMMU group 50: %v", pci)
	}
}

func TestMdevPool(t *testing.T) {
	root := ticketAuth(t)
	createMapping(t, root, "vgpu-pool", url.Values{"mdev": {"1"}}, l40sBEntry("0000:41:00.0", 50), l40sBEntry("0000:61:00.0", 51))
	node := NodeL40SB
	available := func(dev string) float64 {
		var types []map[string]any
		ok(t, tokenAuth, "GET", "/nodes/"+node+"/hardware/pci/"+dev+"/mdev", nil, &types)
		for _, typ := range types {
			if typ["type"] == "nvidia-1157" {
				n, _ := typ["available"].(float64)
				return n
			}
		}
		t.Fatalf("no nvidia-1157 on %s: %v", dev, types)
		return 0
	}
	var vms []int
	for i := range 5 {
		vms = append(vms, createVM(t, tokenAuth, node, gpuVM(fmt.Sprint("vgpu-", i), "mapping=vgpu-pool,mdev=nvidia-1157,pcie=1")))
	}
	// two 24Q instances per L40S: the first device's, then the second's
	wantLeft := [][2]float64{{1, 2}, {0, 2}, {0, 1}, {0, 0}}
	for i, left := range wantLeft {
		mustRun(t, tokenAuth, node, "POST", vmPath(node, vms[i])+"/status/start", nil)
		if a, b := available("0000:41:00.0"), available("0000:61:00.0"); a != left[0] || b != left[1] {
			t.Fatalf("after %d starts: %v and %v instances left, want %v", i+1, a, b, left)
		}
	}
	qt := qtreeOf(t, tokenAuth, node, vms[2])
	if !strings.Contains(qt, "    host = \"ffff:ff:ff.f\"\r\n") || !strings.Contains(qt, fmt.Sprintf("sysfsdev = \"/sys/bus/mdev/devices/00000000-0000-0000-0000-%012d\"", vms[2])) {
		t.Fatalf("the mdev in the qtree:\n%s", qt)
	}
	exit, log := startAnswer(t, tokenAuth, node, vms[4])
	if exit != "could not create mediated device" ||
		!slices.Contains(log, "pci device '0000:41:00.0' has no available instances of 'nvidia-1157'") ||
		!slices.Contains(log, "pci device '0000:61:00.0' has no available instances of 'nvidia-1157'") {
		t.Fatalf("the fifth start: %s %q", exit, log)
	}
}

func TestPVE91Parameters(t *testing.T) {
	var version map[string]any
	ok(t, tokenAuth, "GET", "/version", nil, &version)
	if version["release"] != "9.1" || !strings.HasPrefix(fmt.Sprint(version["version"]), "9.1.") || len(fmt.Sprint(version["repoid"])) != 16 {
		t.Fatalf("/version: %v", version)
	}
	root := ticketAuth(t)
	params := gpuVM("pve91", "mapping="+MappingA6000Second+",pcie=1,driver=vfio")
	params.Set("allow-ksm", "0")
	params.Set("intel-tdx", "type=tdx,attestation=0")
	params.Set("ha-managed", "0")
	vmid := createVM(t, tokenAuth, NodeA6000, params)
	conf, _ := emu.VMConfig(NodeA6000, vmid)
	if conf["allow-ksm"] != "0" || conf["intel-tdx"] != "type=tdx,attestation=0" || conf["ha-managed"] != "" {
		t.Fatalf("config: %v", conf)
	}
	errs := errorsOf(t, fails(t, tokenAuth, "POST", vmPath(NodeA6000, vmid)+"/status/start", url.Values{"with-conntrack-state": {"1"}},
		http.StatusBadRequest, "Parameter verification failed."))
	if errs["with-conntrack-state"] != "Only root may use this option." {
		t.Fatalf("errors: %v", errs)
	}
	mustRun(t, root, NodeA6000, "POST", vmPath(NodeA6000, vmid)+"/status/start", url.Values{"with-conntrack-state": {"1"}})
	_ = emu.StopVMOutOfBand(NodeA6000, vmid)
}

func TestQtreeMultifunction(t *testing.T) {
	node := NodeA6000
	vmid := createVM(t, tokenAuth, node, gpuVM("qtree-mf", "mapping="+MappingA6000Second+",pcie=1"))
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	t.Cleanup(func() { _ = emu.StopVMOutOfBand(node, vmid) })
	qt := qtreeOf(t, tokenAuth, node, vmid)
	if vfioHost(qt, "hostpci0.0") != "0000:02:00.0" || vfioHost(qt, "hostpci0.1") != "0000:02:00.1" || vfioHost(qt, "hostpci0") != "" {
		t.Fatalf("a multifunction device's functions are hostpci0.0 and hostpci0.1:\n%s", qt)
	}
	if !strings.HasPrefix(qt, "bus: main-system-bus\r\n  type System\r\n  dev: q35-pcihost, id \"\"\r\n") ||
		!strings.Contains(qt, "\r\n          dev: vfio-pci, id \"hostpci0.0\"\r\n            host = \"0000:02:00.0\"\r\n") {
		t.Fatalf("not QEMU's qdev_print layout:\n%s", qt)
	}
}

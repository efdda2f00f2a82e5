package pveemu

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func vmPath(node string, vmid int) string { return fmt.Sprintf("/nodes/%s/qemu/%d", node, vmid) }

// gpuVM are a q35/OVMF VM's parameters with one GPU.
func gpuVM(name, hostpci string) url.Values {
	return url.Values{
		"name": {name}, "cores": {"4"}, "memory": {"8192"}, "balloon": {"0"}, "cpu": {"host"},
		"machine": {"q35"}, "bios": {"ovmf"}, "efidisk0": {Storage + ":1,efitype=4m,pre-enrolled-keys=1"},
		"scsi0": {Storage + ":32"}, "net0": {"virtio,bridge=" + Bridge}, "agent": {"1"}, "hostpci0": {hostpci},
	}
}

func TestVMLifecycleWithTokenAndMapping(t *testing.T) {
	node := NodeA6000
	vmid := freeVMID(t)
	params := gpuVM("lifecycle", "mapping="+MappingA6000First+",pcie=1,x-vga=1,rombar=1")
	params.Set("vmid", fmt.Sprint(vmid))
	u := upid(t, tokenAuth, "POST", "/nodes/"+node+"/qemu", params)
	if !strings.HasPrefix(u, "UPID:"+node+":") || !strings.HasSuffix(u, ":qmcreate:"+fmt.Sprint(vmid)+":"+RoleTokenID+":") {
		t.Fatalf("UPID %q is not PVE's UPID:node:pid:pstart:starttime:type:id:user: form", u)
	}
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, vmid) })
	var conf map[string]any
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/config", nil, &conf)
	if conf["lock"] != "create" {
		t.Fatalf("while the create task runs the config is locked: %v", conf)
	}
	st, log := waitTask(t, tokenAuth, node, u)
	mustSucceed(t, st, log)
	if st.Type != "qmcreate" || st.User+"!"+st.TokenID != RoleTokenID || log[len(log)-1] != "TASK OK" {
		t.Fatalf("create task: %+v %q", st, log)
	}

	conf = nil
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/config", nil, &conf)
	if conf["cores"] != float64(4) || conf["balloon"] != float64(0) || conf["memory"] != "8192" {
		t.Fatalf("config values lack PVE's JSON types (cores, balloon numbers; memory a string): %v", conf)
	}
	if conf["hostpci0"] != "mapping=a6000-0,pcie=1,x-vga=1,rombar=1" || conf["lock"] != nil {
		t.Fatalf("config: %v", conf)
	}
	if !strings.HasPrefix(fmt.Sprint(conf["scsi0"]), Storage+":vm-"+fmt.Sprint(vmid)+"-disk-") || !strings.Contains(fmt.Sprint(conf["net0"]), "virtio=BC:24:11:") {
		t.Fatalf("disks and NICs are not allocated: %v", conf)
	}

	st, log = runTask(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	mustSucceed(t, st, log)
	if st.ExitStatus != "OK" {
		t.Fatalf("a VM with an EFI disk starts without warnings: %s %q", st.ExitStatus, log)
	}
	var status map[string]any
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/status/current", nil, &status)
	if status["status"] != "running" || status["qmpstatus"] != "running" || status["running-machine"] != "pc-q35-10.1+pve0" || status["agent"] != float64(1) {
		t.Fatalf("status/current: %v", status)
	}
	var ifaces struct {
		Result []struct {
			Name string `json:"name"`
			IPs  []struct {
				IP   string `json:"ip-address"`
				Type string `json:"ip-address-type"`
			} `json:"ip-addresses"`
		} `json:"result"`
	}
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/agent/network-get-interfaces", nil, &ifaces)
	if len(ifaces.Result) != 2 || ifaces.Result[1].IPs[0].IP != GuestIPv4(vmid) {
		t.Fatalf("guest agent interfaces: %+v", ifaces)
	}

	fails(t, tokenAuth, "DELETE", vmPath(node, vmid), nil, http.StatusInternalServerError, fmt.Sprintf("VM %d is running - destroy failed", vmid))
	st, log = runTask(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/stop", nil)
	mustSucceed(t, st, log)
	if emu.VMStatus(node, vmid) != "stopped" {
		t.Fatal("stop left the VM running")
	}
	fails(t, tokenAuth, "POST", vmPath(node, vmid)+"/status/shutdown", nil, http.StatusInternalServerError, fmt.Sprintf("VM %d not running", vmid))
	fails(t, tokenAuth, "GET", vmPath(node, vmid)+"/agent/network-get-interfaces", nil, http.StatusInternalServerError, fmt.Sprintf("VM %d is not running", vmid))

	st, log = runTask(t, tokenAuth, node, "DELETE", vmPath(node, vmid), url.Values{"purge": {"1"}})
	mustSucceed(t, st, log)
	if emu.VMStatus(node, vmid) != "" {
		t.Fatal("destroy left the VM")
	}
	fails(t, tokenAuth, "GET", vmPath(node, vmid)+"/config", nil, http.StatusInternalServerError,
		fmt.Sprintf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid))
}

func TestRawHostPCIIsRootOnly(t *testing.T) {
	node := NodeA6000
	raw := "0000:01:00,pcie=1,rombar=1"
	for name, a := range map[string]auth{"a privilege-separated token": tokenAuth, "root@pam's own token": rootTokenAuth} {
		t.Run(name+" cannot create with a raw device", func(t *testing.T) {
			vmid := freeVMID(t)
			params := gpuVM("raw", raw)
			params.Set("vmid", fmt.Sprint(vmid))
			fails(t, a, "POST", "/nodes/"+node+"/qemu", params, http.StatusInternalServerError, "only root can set 'hostpci0' config for non-mapped devices")
			if emu.VMStatus(node, vmid) != "" {
				t.Fatal("the refused create left a VM")
			}
		})
	}
	root := ticketAuth(t)
	vmid := createVM(t, root, node, gpuVM("raw-root", raw))
	t.Run("PUT refuses in the request", func(t *testing.T) {
		fails(t, tokenAuth, "PUT", vmPath(node, vmid)+"/config", url.Values{"hostpci1": {"0000:02:00"}}, http.StatusInternalServerError, "only root can set 'hostpci1' config for non-mapped devices")
	})
	t.Run("POST refuses in the qmconfig task", func(t *testing.T) {
		st, log := runTask(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/config", url.Values{"hostpci1": {"0000:02:00"}})
		if st.ExitStatus != "only root can set 'hostpci1' config for non-mapped devices" || log[len(log)-1] != "TASK ERROR: "+st.ExitStatus {
			t.Fatalf("task: %s %q", st.ExitStatus, log)
		}
	})
	t.Run("a token cannot delete the raw device either", func(t *testing.T) {
		fails(t, tokenAuth, "PUT", vmPath(node, vmid)+"/config", url.Values{"delete": {"hostpci0"}}, http.StatusInternalServerError, "only root can set 'hostpci0' config for non-mapped devices")
	})
	if conf, _ := emu.VMConfig(node, vmid); conf["hostpci1"] != "" || conf["hostpci0"] != raw {
		t.Fatalf("refused updates changed the config: %v", conf)
	}
	t.Run("the token may still change other keys", func(t *testing.T) {
		ok(t, tokenAuth, "PUT", vmPath(node, vmid)+"/config", url.Values{"cores": {"8"}}, nil)
		if conf, _ := emu.VMConfig(node, vmid); conf["cores"] != "8" {
			t.Fatalf("cores: %v", conf)
		}
	})
	t.Run("root may set and delete raw devices", func(t *testing.T) {
		ok(t, root, "PUT", vmPath(node, vmid)+"/config", url.Values{"hostpci1": {"0000:02:00.0,rombar=0"}}, nil)
		ok(t, root, "PUT", vmPath(node, vmid)+"/config", url.Values{"delete": {"hostpci1"}}, nil)
		if conf, _ := emu.VMConfig(node, vmid); conf["hostpci1"] != "" {
			t.Fatalf("hostpci1 not deleted: %v", conf)
		}
	})
}

func TestStartRules(t *testing.T) {
	root := ticketAuth(t)
	start := func(t *testing.T, node string, vmid int) (taskStatus, []string) {
		t.Helper()
		return runTask(t, root, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	}

	t.Run("pcie without q35 is accepted, and its start fails", func(t *testing.T) {
		params := gpuVM("i440fx", "0000:02:00,pcie=1,rombar=1")
		params.Del("machine")
		vmid := createVM(t, root, NodeA6000, params)
		st, log := start(t, NodeA6000, vmid)
		if !strings.HasPrefix(st.ExitStatus, "q35 machine model is not enabled") || !slices.Contains(log, "TASK ERROR: "+st.ExitStatus) {
			t.Fatalf("start: %s %q", st.ExitStatus, log)
		}
		if emu.VMStatus(NodeA6000, vmid) != "stopped" {
			t.Fatal("the VM runs")
		}
	})

	t.Run("OVMF without an EFI disk starts with a warning", func(t *testing.T) {
		params := gpuVM("no-efidisk", "0000:02:00,pcie=1,rombar=1")
		params.Del("efidisk0")
		vmid := createVM(t, root, NodeA6000, params)
		st, log := start(t, NodeA6000, vmid)
		if st.ExitStatus != "WARNINGS: 1" || !slices.Contains(log, "WARN: no efidisk configured! Using temporary efivars disk.") || log[len(log)-1] != "TASK WARNINGS: 1" {
			t.Fatalf("start: %s %q", st.ExitStatus, log)
		}
		if emu.VMStatus(NodeA6000, vmid) != "running" {
			t.Fatal("the VM does not run")
		}
		_ = emu.StopVMOutOfBand(NodeA6000, vmid)
	})

	t.Run("a device a running VM holds fails the second start", func(t *testing.T) {
		first := createVM(t, root, NodeA6000, gpuVM("holder", "0000:01:00,pcie=1,rombar=1"))
		second := createVM(t, tokenAuth, NodeA6000, gpuVM("taker", "mapping="+MappingA6000First+",pcie=1,rombar=1"))
		mustRun(t, root, NodeA6000, "POST", vmPath(NodeA6000, first)+"/status/start", nil)
		st, log := runTask(t, tokenAuth, NodeA6000, "POST", vmPath(NodeA6000, second)+"/status/start", nil)
		want := fmt.Sprintf("PCI device '0000:01:00.0' already in use by VMID '%d'", first)
		if st.ExitStatus != want {
			t.Fatalf("start: want %q, got %s %q", want, st.ExitStatus, log)
		}
		if err := emu.StartVMOutOfBand(NodeA6000, second); err == nil || err.Error() != want {
			t.Fatalf("an out-of-band start makes the same checks: want %q, got %v", want, err)
		}
		if err := emu.StopVMOutOfBand(NodeA6000, first); err != nil {
			t.Fatal(err)
		}
		mustRun(t, tokenAuth, NodeA6000, "POST", vmPath(NodeA6000, second)+"/status/start", nil)
		_ = emu.StopVMOutOfBand(NodeA6000, second)
		if err := emu.StartVMOutOfBand(NodeA6000, first); err != nil || emu.VMStatus(NodeA6000, first) != "running" {
			t.Fatalf("an out-of-band start of a free device: %v, %s", err, emu.VMStatus(NodeA6000, first))
		}
		_ = emu.StopVMOutOfBand(NodeA6000, first)
	})

	t.Run("an mdev type without free instances fails the start", func(t *testing.T) {
		params := gpuVM("vgpu", "mapping="+MappingL40SVGPU+",mdev=nvidia-1159,pcie=1,rombar=1")
		first := createVM(t, tokenAuth, NodeL40S, params)
		second := createVM(t, tokenAuth, NodeL40S, params)
		mustRun(t, tokenAuth, NodeL40S, "POST", vmPath(NodeL40S, first)+"/status/start", nil)
		var types []map[string]any
		ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/hardware/pci/0000:c1:00.0/mdev", nil, &types)
		for _, typ := range types {
			if typ["available"] != float64(0) {
				t.Fatalf("with the one 48Q instance in use, %v still has instances", typ)
			}
		}
		st, log := runTask(t, tokenAuth, NodeL40S, "POST", vmPath(NodeL40S, second)+"/status/start", nil)
		if st.ExitStatus != "could not create mediated device" || !slices.Contains(log, "pci device '0000:c1:00.0' has no available instances of 'nvidia-1159'") {
			t.Fatalf("start: %s %q", st.ExitStatus, log)
		}
		_ = emu.StopVMOutOfBand(NodeL40S, first)
	})

	t.Run("a mapping for another node fails the start", func(t *testing.T) {
		vmid := createVM(t, tokenAuth, NodeH100, gpuVM("wrong-node", "mapping="+MappingA6000First+",pcie=1,rombar=1"))
		st, _ := runTask(t, tokenAuth, NodeH100, "POST", vmPath(NodeH100, vmid)+"/status/start", nil)
		if st.ExitStatus != "PCI device mapping not found for 'a6000-0'" {
			t.Fatalf("start: %s", st.ExitStatus)
		}
	})

	t.Run("PVE does not check IOMMU groups: the H100 starts beside its NIC", func(t *testing.T) {
		vmid := createVM(t, root, NodeH100, gpuVM("h100", "0000:41:00.0,pcie=1,rombar=1"))
		mustRun(t, root, NodeH100, "POST", vmPath(NodeH100, vmid)+"/status/start", nil)
		_ = emu.StopVMOutOfBand(NodeH100, vmid)
	})
}

func TestConfigUpdates(t *testing.T) {
	root := ticketAuth(t)
	node := NodeA6000
	vmid := createVM(t, root, node, gpuVM("updates", "0000:02:00,pcie=1,rombar=1"))
	var conf map[string]any
	ok(t, root, "GET", vmPath(node, vmid)+"/config", nil, &conf)
	digest := fmt.Sprint(conf["digest"])

	t.Run("a stale digest fails the task", func(t *testing.T) {
		ok(t, root, "PUT", vmPath(node, vmid)+"/config", url.Values{"name": {"renamed"}, "digest": {digest}}, nil)
		st, _ := runTask(t, root, node, "POST", vmPath(node, vmid)+"/config", url.Values{"cores": {"2"}, "digest": {digest}})
		if st.ExitStatus != "checksum mismatch (file change by other user?)" {
			t.Fatalf("task: %s", st.ExitStatus)
		}
		fails(t, root, "PUT", vmPath(node, vmid)+"/config", url.Values{"cores": {"2"}, "digest": {digest}}, http.StatusInternalServerError, "checksum mismatch")
	})

	t.Run("parameters are verified", func(t *testing.T) {
		ans := fails(t, root, "PUT", vmPath(node, vmid)+"/config", url.Values{"cores": {"many"}, "bogus": {"1"}}, http.StatusBadRequest, "Parameter verification failed.")
		if !strings.Contains(string(ans.env["errors"]), `"cores":"type check ('integer') failed - got 'many'"`) || !strings.Contains(string(ans.env["errors"]), `"bogus"`) {
			t.Fatalf("errors: %s", ans.body)
		}
		fails(t, root, "PUT", vmPath(node, vmid)+"/config", nil, http.StatusInternalServerError, "no options specified")
	})

	t.Run("a running VM keeps hostpci changes pending until it starts again", func(t *testing.T) {
		mustRun(t, root, node, "POST", vmPath(node, vmid)+"/status/start", nil)
		mustRun(t, root, node, "POST", vmPath(node, vmid)+"/config", url.Values{"hostpci0": {"0000:02:00,pcie=1,x-vga=1,rombar=1"}, "name": {"hot"}})
		raw, _ := emu.VMConfig(node, vmid)
		if raw["hostpci0"] != "0000:02:00,pcie=1,rombar=1" || raw["name"] != "hot" {
			t.Fatalf("running VM: hostpci0 must wait, name applies: %v", raw)
		}
		var pending []map[string]any
		ok(t, root, "GET", vmPath(node, vmid)+"/pending", nil, &pending)
		found := false
		for _, p := range pending {
			if p["key"] == "hostpci0" {
				found = p["pending"] == "0000:02:00,pcie=1,x-vga=1,rombar=1"
			}
		}
		if !found {
			t.Fatalf("pending: %v", pending)
		}
		conf = nil
		ok(t, root, "GET", vmPath(node, vmid)+"/config", url.Values{"current": {"1"}}, &conf)
		if conf["hostpci0"] != "0000:02:00,pcie=1,rombar=1" {
			t.Fatalf("current=1 shows the pending value: %v", conf)
		}
		mustRun(t, root, node, "POST", vmPath(node, vmid)+"/status/stop", nil)
		mustRun(t, root, node, "POST", vmPath(node, vmid)+"/status/start", nil)
		if raw, _ := emu.VMConfig(node, vmid); raw["hostpci0"] != "0000:02:00,pcie=1,x-vga=1,rombar=1" {
			t.Fatalf("the start did not apply the pending change: %v", raw)
		}
		_ = emu.StopVMOutOfBand(node, vmid)
	})

	t.Run("delete removes keys of a stopped VM", func(t *testing.T) {
		mustRun(t, root, node, "POST", vmPath(node, vmid)+"/config", url.Values{"delete": {"hostpci0,agent"}})
		if raw, _ := emu.VMConfig(node, vmid); raw["hostpci0"] != "" || raw["agent"] != "" {
			t.Fatalf("delete left keys: %v", raw)
		}
	})
}

func TestCloneTemplate(t *testing.T) {
	node := NodeA6000
	newid := freeVMID(t)
	st, log := runTask(t, tokenAuth, node, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(newid)}, "name": {"cloned"}, "full": {"1"}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, newid) })
	mustSucceed(t, st, log)
	if st.Type != "qmclone" || st.ID != fmt.Sprint(Templates[node]) {
		t.Fatalf("clone task: %+v", st)
	}
	conf, found := emu.VMConfig(node, newid)
	if !found || conf["name"] != "cloned" || conf["template"] != "" || !strings.HasPrefix(conf["scsi0"], fmt.Sprintf("%s:vm-%d-disk-", Storage, newid)) {
		t.Fatalf("clone: %v", conf)
	}
	fails(t, tokenAuth, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(newid)}}, http.StatusInternalServerError, "config file already exists")
	fails(t, tokenAuth, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(newid + 1)}, "target": {NodeH100}}, http.StatusInternalServerError, "(VM uses local storage)")
	fails(t, tokenAuth, "POST", vmPath(node, newid)+"/clone", url.Values{"newid": {fmt.Sprint(newid + 1)}, "full": {"0"}}, http.StatusInternalServerError, "Linked clone feature is not supported for drive 'efidisk0'")
	linked := newid + 1
	mustRun(t, tokenAuth, node, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(linked)}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, linked) })
	if conf, _ := emu.VMConfig(node, linked); !strings.HasPrefix(conf["scsi0"], fmt.Sprintf("%s:vm-%d-disk-", Storage, linked)) || conf["name"] != "Copy-of-VM-"+TemplateName {
		t.Fatalf("a template's clone is linked by default: %v", conf)
	}
	st, _ = runTask(t, tokenAuth, node, "POST", vmPath(node, Templates[node])+"/status/start", nil)
	if st.ExitStatus != "you can't start a vm if it's a template" {
		t.Fatalf("starting the template: %s", st.ExitStatus)
	}
}

func TestFailNextTaskAndCallCounts(t *testing.T) {
	node := NodeCPU
	emu.ResetCallCounts()
	emu.FailNextTask("qmcreate", "unable to create VM - storage 'local-lvm' is full", "  Volume group \"pve\" has insufficient free space")
	vmid := freeVMID(t)
	st, log := runTask(t, tokenAuth, node, "POST", "/nodes/"+node+"/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}, "name": {"doomed"}})
	if st.ExitStatus != "unable to create VM - storage 'local-lvm' is full" || !slices.Contains(log, "  Volume group \"pve\" has insufficient free space") {
		t.Fatalf("task: %s %q", st.ExitStatus, log)
	}
	if emu.VMStatus(node, vmid) != "" {
		t.Fatal("a failed create left its VM")
	}
	counts := emu.CallCounts()
	if counts["POST /nodes/{node}/qemu"] != 1 || counts["GET /nodes/{node}/tasks/{upid}/status"] < 1 || counts["GET /nodes/{node}/tasks/{upid}/log"] != 1 {
		t.Fatalf("call counts: %v", counts)
	}
	mustRun(t, tokenAuth, node, "POST", "/nodes/"+node+"/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}, "name": {"lucky"}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, vmid) })
}

// testHeldTask holds a clone's task, checks that it runs (the VM exists,
// locked: its destroy task fails) until released, then ends OK.
func testHeldTask(t *testing.T) {
	node := NodeA6000
	emu.HoldNextTask("qmclone")
	newid := freeVMID(t)
	u := upid(t, tokenAuth, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(newid)}, "name": {"held"}})
	t.Cleanup(func() { emu.ReleaseHeldTasks(); _ = emu.DeleteVMOutOfBand(node, newid) })
	if held := emu.HeldTasks(); !slices.Equal(held, []string{u}) {
		t.Fatalf("held tasks: %q, want the clone's %s", held, u)
	}
	var st taskStatus
	ok(t, tokenAuth, "GET", "/nodes/"+node+"/tasks/"+url.PathEscape(u)+"/status", nil, &st)
	if conf, found := emu.VMConfig(node, newid); st.Status != "running" || !found || conf["lock"] != "clone" {
		t.Fatalf("a held clone: task %s, config %v (found %v)", st.Status, conf, found)
	}
	if st, _ := runTask(t, tokenAuth, node, "DELETE", vmPath(node, newid), nil); st.ExitStatus != "VM is locked (clone)" {
		t.Fatalf("destroying a VM whose clone runs: %s", st.ExitStatus)
	}
	emu.ReleaseHeldTasks()
	if held := emu.HeldTasks(); len(held) != 0 {
		t.Fatalf("held after the release: %q", held)
	}
	st, log := waitTask(t, tokenAuth, node, u)
	mustSucceed(t, st, log)
	if conf, _ := emu.VMConfig(node, newid); conf["lock"] != "" || conf["name"] != "held" {
		t.Fatalf("the released clone: %v", conf)
	}
	if emu.HoldNextTask("qmclone"); len(emu.HeldTasks()) != 0 {
		t.Fatal("a hold asked for holds no task before one starts")
	}
	emu.ReleaseHeldTasks()
	mustRun(t, tokenAuth, node, "POST", vmPath(node, Templates[node])+"/clone", url.Values{"newid": {fmt.Sprint(newid + 1)}, "name": {"after"}})
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, newid+1) })
}

func TestHeldTaskRunsUntilReleased(t *testing.T) { testHeldTask(t) }

func TestOutOfBandChanges(t *testing.T) {
	node := NodeA6000
	vmid := createVM(t, tokenAuth, node, gpuVM("drift", "mapping="+MappingA6000Second+",pcie=1,rombar=1"))
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	if err := emu.SetVMConfigOutOfBand(node, vmid, "hostpci0", ""); err != nil {
		t.Fatal(err)
	}
	if err := emu.StopVMOutOfBand(node, vmid); err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/config", nil, &conf)
	if _, has := conf["hostpci0"]; has {
		t.Fatalf("hostpci0 still there: %v", conf)
	}
	var status map[string]any
	ok(t, tokenAuth, "GET", vmPath(node, vmid)+"/status/current", nil, &status)
	if status["status"] != "stopped" {
		t.Fatalf("status: %v", status)
	}
	if err := emu.DeleteVMOutOfBand(node, vmid); err != nil {
		t.Fatal(err)
	}
	fails(t, tokenAuth, "GET", vmPath(node, vmid)+"/status/current", nil, http.StatusInternalServerError, "does not exist")
}

func TestMappingNeedsMappingUse(t *testing.T) {
	noMapping := auth{token: NoMappingTokenID + "=" + NoMappingTokenSecret}
	node := NodeA6000
	vmid := freeVMID(t)
	params := gpuVM("no-mapping-use", "mapping="+MappingA6000First+",pcie=1,rombar=1")
	params.Set("vmid", fmt.Sprint(vmid))
	fails(t, noMapping, "POST", "/nodes/"+node+"/qemu", params, http.StatusForbidden, "Permission check failed (/mapping/pci/a6000-0, Mapping.Use)")
	if emu.VMStatus(node, vmid) != "" {
		t.Fatal("the refused create left a VM")
	}
	params.Del("hostpci0")
	vmid = createVM(t, noMapping, node, params)
	fails(t, noMapping, "PUT", vmPath(node, vmid)+"/config", url.Values{"hostpci0": {"mapping=a6000-0"}}, http.StatusForbidden, "Permission check failed (/mapping/pci/a6000-0, Mapping.Use)")
	st, _ := runTask(t, noMapping, node, "POST", vmPath(node, vmid)+"/config", url.Values{"hostpci0": {"mapping=a6000-0"}})
	if st.ExitStatus != "Permission check failed (/mapping/pci/a6000-0, Mapping.Use)" {
		t.Fatalf("config task: %s", st.ExitStatus)
	}
	var mappings []any
	ok(t, noMapping, "GET", "/cluster/mapping/pci", nil, &mappings)
	if len(mappings) != 0 {
		t.Fatalf("a token without Mapping privileges sees mappings: %v", mappings)
	}
}

func TestRebootAppliesPendingAndTaskList(t *testing.T) {
	node := NodeA6000
	// VMIDs are reused between tests, and PVE keeps the tasks of a
	// destroyed VM: this test's tasks are those that were not there before.
	var before []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+node+"/tasks", url.Values{"limit": {"10000"}}, &before)
	old := map[any]bool{}
	for _, task := range before {
		old[task["upid"]] = true
	}
	vmid := createVM(t, tokenAuth, node, gpuVM("reboot", "mapping="+MappingA6000Second+",pcie=1,rombar=1"))
	fails(t, tokenAuth, "POST", vmPath(node, vmid)+"/status/reboot", nil, http.StatusInternalServerError, fmt.Sprintf("VM %d not running", vmid))
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/start", nil)
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/config", url.Values{"cores": {"6"}})
	if conf, _ := emu.VMConfig(node, vmid); conf["cores"] != "4" {
		t.Fatalf("cores changed on a running VM: %v", conf)
	}
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/reset", nil)
	if conf, _ := emu.VMConfig(node, vmid); conf["cores"] != "4" {
		t.Fatalf("a reset applied pending changes: %v", conf)
	}
	mustRun(t, tokenAuth, node, "POST", vmPath(node, vmid)+"/status/reboot", nil)
	if conf, _ := emu.VMConfig(node, vmid); conf["cores"] != "6" || emu.VMStatus(node, vmid) != "running" {
		t.Fatalf("the reboot did not apply pending changes or left the VM stopped: %v", conf)
	}
	var tasks []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+node+"/tasks", url.Values{"vmid": {fmt.Sprint(vmid)}}, &tasks)
	var types []string
	for _, task := range tasks {
		if !old[task["upid"]] {
			types = append(types, fmt.Sprint(task["type"], "=", task["status"]))
		}
	}
	want := []string{"qmreboot=OK", "qmreset=OK", "qmconfig=OK", "qmstart=OK", "qmcreate=OK"}
	if !slices.Equal(types, want) {
		t.Fatalf("tasks of VM %d: %v, want %v", vmid, types, want)
	}
	_ = emu.StopVMOutOfBand(node, vmid)
}

func TestNodeClusterAndStorageStatus(t *testing.T) {
	var status map[string]any
	fails(t, tokenAuth, "GET", "/nodes/"+NodeH100+"/status", nil, http.StatusForbidden, "Permission check failed (/nodes/"+NodeH100+", Sys.Audit)")
	ok(t, rootTokenAuth, "GET", "/nodes/"+NodeH100+"/status", nil, &status)
	if cpu, _ := status["cpuinfo"].(map[string]any); cpu == nil || cpu["cpus"] != float64(96) {
		t.Fatalf("node status: %v", status)
	}
	var cluster []map[string]any
	ok(t, tokenAuth, "GET", "/cluster/status", nil, &cluster)
	if len(cluster) != 1+len(hostProfiles()) || cluster[0]["type"] != "cluster" || cluster[0]["quorate"] != float64(1) {
		t.Fatalf("cluster status: %v", cluster)
	}
	var storage []map[string]any
	ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/storage", nil, &storage)
	if len(storage) != 1 || storage[0]["storage"] != Storage || storage[0]["active"] != float64(1) {
		t.Fatalf("storage: %v", storage)
	}
	ok(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/storage/"+Storage+"/status", nil, &status)
	if status["type"] != "lvmthin" {
		t.Fatalf("storage status: %v", status)
	}
	fails(t, rootTokenAuth, "GET", "/nodes/"+NodeL40S+"/storage/nfs/status", nil, http.StatusInternalServerError, "storage 'nfs' does not exist")
	fails(t, tokenAuth, "GET", "/nodes/"+NodeL40S+"/storage/nfs/status", nil, http.StatusForbidden, "Permission check failed (/storage/nfs, Datastore.Audit|Datastore.AllocateSpace)")
	var index []map[string]string
	ok(t, tokenAuth, "GET", vmPath(NodeA6000, Templates[NodeA6000]), nil, &index)
	if !slices.ContainsFunc(index, func(d map[string]string) bool { return d["subdir"] == "config" }) {
		t.Fatalf("VM index: %v", index)
	}
	var empty []any
	ok(t, tokenAuth, "GET", "/cluster/ha/resources", nil, &empty)
	ok(t, tokenAuth, "GET", "/pools", nil, &empty)
	if len(empty) != 0 {
		t.Fatalf("pools: %v", empty)
	}
}

func TestLockedVMRefusesStopAndDestroy(t *testing.T) {
	node := NodeCPU
	vmid := createVM(t, tokenAuth, node, url.Values{"name": {"locked"}})
	if err := emu.SetVMConfigOutOfBand(node, vmid, "lock", "backup"); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct{ method, path string }{
		{"POST", vmPath(node, vmid) + "/status/start"},
		{"POST", vmPath(node, vmid) + "/status/stop"},
		{"DELETE", vmPath(node, vmid)},
	} {
		st, _ := runTask(t, tokenAuth, node, call.method, call.path, nil)
		if st.ExitStatus != "VM is locked (backup)" {
			t.Errorf("%s %s: %s", call.method, call.path, st.ExitStatus)
		}
	}
	fails(t, tokenAuth, "PUT", vmPath(node, vmid)+"/config", url.Values{"cores": {"2"}}, http.StatusInternalServerError, "VM is locked (backup)")
	if emu.VMStatus(node, vmid) != "stopped" {
		t.Fatal("the locked VM is gone or running")
	}
}

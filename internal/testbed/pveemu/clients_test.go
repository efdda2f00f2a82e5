package pveemu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// clientTimeout bounds one real client's run.
const clientTimeout = 2 * time.Minute

// curl runs curl against the emulator, trusting the testbed CA, and
// returns its output with the status line and headers (-i).
func curl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", append([]string{"-sS", "-i", "--cacert", emu.CAFile()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// curlData is the "data" of a curl answer, which must be 200.
func curlData(t *testing.T, out string, v any) {
	t.Helper()
	status, rest, _ := strings.Cut(out, "\r\n")
	if status != "HTTP/1.1 200 OK" {
		t.Fatalf("want 200 OK, got %s", out)
	}
	_, body, _ := strings.Cut(rest, "\r\n\r\n")
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("data %s: %v", env.Data, err)
	}
}

func TestCurlClient(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed for this test: %v", err)
	}
	header := "Authorization: PVEAPIToken=" + TokenID + "=" + TokenSecret
	base := emu.URL()

	t.Run("TLS is verified: without the testbed CA curl refuses", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "curl", "-sS", "--capath", "/nonexistent", "--cacert", "/dev/null", "-H", header, base+"/version").CombinedOutput()
		if err == nil {
			t.Fatalf("curl trusted the emulator without its CA: %s", out)
		}
	})

	t.Run("hardware/pci", func(t *testing.T) {
		var pci []map[string]any
		curlData(t, curl(t, "-H", header, base+"/nodes/"+NodeA6000+"/hardware/pci"), &pci)
		ids := map[any]bool{}
		for _, f := range pci {
			ids[f["id"]] = true
		}
		if !ids["0000:01:00.0"] || !ids["0000:02:00.1"] {
			t.Fatalf("A6000 functions missing: %v", pci)
		}
	})

	t.Run("a wrong token secret is 401 with PVE's status line", func(t *testing.T) {
		out := curl(t, "-H", "Authorization: PVEAPIToken="+TokenID+"=wrong", base+"/version")
		if !strings.HasPrefix(out, "HTTP/1.1 401 Authentication failed!\r\n") {
			t.Fatalf("got %s", out)
		}
	})

	t.Run("a token's user and its permissions, as Telmate's provider reads them", func(t *testing.T) {
		peers := "Authorization: PVEAPIToken=" + PeersTokenID + "=" + PeersTokenSecret
		var users []map[string]any
		curlData(t, curl(t, "-H", peers, base+"/access/users?full=1"), &users)
		found := false
		for _, u := range users {
			found = found || u["userid"] == PeersUser
		}
		if !found {
			t.Fatalf("GET /access/users?full=1 lacks %s: %v", PeersUser, users)
		}
		var perms map[string]map[string]int
		curlData(t, curl(t, "-H", peers, base+"/access/permissions?userid="+PeersUser+"&path=/"), &perms)
		for _, p := range telmateMinimum {
			if perms["/"][p] != 1 {
				t.Errorf("terraform@pve lacks %s on /: %v", p, perms)
			}
		}
	})

	t.Run("create, start and follow the tasks", func(t *testing.T) {
		vmid := freeVMID(t)
		t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(NodeA6000, vmid) })
		var upid string
		curlData(t, curl(t, "-H", header, "-X", "POST",
			"--data-urlencode", fmt.Sprintf("vmid=%d", vmid), "--data-urlencode", "name=curl",
			"--data-urlencode", "machine=q35", "--data-urlencode", "hostpci0=mapping="+MappingA6000Second+",pcie=1,rombar=1",
			base+"/nodes/"+NodeA6000+"/qemu"), &upid)
		follow := func(upid string) string {
			delay := 10 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for {
				var st map[string]any
				curlData(t, curl(t, "-H", header, base+"/nodes/"+NodeA6000+"/tasks/"+url.PathEscape(upid)+"/status"), &st)
				if st["user"] != "terraform@pve" || st["tokenid"] != "gpu" {
					t.Fatalf("task status: a token's task has user and tokenid apart: %v", st)
				}
				if st["status"] == "stopped" {
					return fmt.Sprint(st["exitstatus"])
				}
				select {
				case <-ctx.Done():
					t.Fatalf("task %s still running", upid)
				case <-time.After(delay):
				}
				delay = min(2*delay, 200*time.Millisecond)
			}
		}
		if exit := follow(upid); exit != "OK" {
			t.Fatalf("create: %s", exit)
		}
		curlData(t, curl(t, "-H", header, "-X", "POST", base+vmPath(NodeA6000, vmid)+"/status/start"), &upid)
		if exit := follow(upid); exit != "OK" {
			t.Fatalf("start: %s", exit)
		}
		if emu.VMStatus(NodeA6000, vmid) != "running" {
			t.Fatal("the VM does not run")
		}
		out := curl(t, "-H", header, "-X", "PUT", "--data-urlencode", "hostpci1=0000:02:00", base+vmPath(NodeA6000, vmid)+"/config")
		if !strings.HasPrefix(out, "HTTP/1.1 500 only root can set 'hostpci1' config for non-mapped devices\r\n") ||
			!strings.HasSuffix(out, `{"data":null,"message":"only root can set 'hostpci1' config for non-mapped devices\n"}`) {
			t.Fatalf("raw hostpci by a token: %s", out)
		}
		_ = emu.StopVMOutOfBand(NodeA6000, vmid)
	})
}

// systemPython is Debian's python3, which python3-proxmoxer installs into.
const systemPython = "/usr/bin/python3"

func TestProxmoxerClient(t *testing.T) {
	if err := exec.Command(systemPython, "-c", "import proxmoxer").Run(); err != nil {
		t.Fatalf("Debian's python3-proxmoxer is needed for this test (apt-get install -y python3-proxmoxer): %v", err)
	}
	vmid := freeVMID(t)
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(NodeA6000, vmid) })
	host := strings.TrimSuffix(strings.TrimPrefix(emu.URL(), "https://"), "/api2/json")
	user, name, _ := strings.Cut(TokenID, "!")
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, "testdata/proxmoxer_flow.py")
	cmd.Env = append(os.Environ(), "PM_HOST="+host, "PM_CA_CERT_FILE="+emu.CAFile(),
		"PM_TOKEN_USER="+user, "PM_TOKEN_NAME="+name, "PM_TOKEN_SECRET="+TokenSecret,
		"PM_USER="+RootUser, "PM_PASS="+RootPassword,
		"NODE="+NodeA6000, fmt.Sprintf("VMID=%d", vmid), "MAPPING="+MappingA6000First,
		// the emulator's certificate is for 127.0.0.1: no proxy in between
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("proxmoxer: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var step map[string]any
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("proxmoxer printed %q: %v", sc.Text(), err)
		}
		steps[fmt.Sprint(step["step"])] = step
	}
	check := func(step, field string, want any) {
		t.Helper()
		if got := steps[step][field]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("proxmoxer %s: %s = %v, want %v (all: %v)", step, field, got, want, steps[step])
		}
	}
	check("version", "version", Version)
	check("pci", "nvidia", []string{"0000:01:00.0", "0000:01:00.1", "0000:02:00.0", "0000:02:00.1"})
	check("create", "exitstatus", "OK")
	check("config", "exitstatus", "OK")
	check("config", "hostpci0", "mapping="+MappingA6000First+",pcie=1,rombar=1")
	check("raw", "refused", true)
	check("raw", "status", 500)
	if msg := fmt.Sprint(steps["raw"]["message"]); !strings.Contains(msg, "only root can set 'hostpci1' config for non-mapped devices") {
		t.Errorf("proxmoxer's error lacks PVE's reason phrase: %s", msg)
	}
	check("start", "exitstatus", "OK")
	check("start", "status", "running")
	check("start", "qmpstatus", "running")
	check("root", "exitstatus", "OK")
	check("root", "pending_hostpci1", "0000:02:00,pcie=1,rombar=1")
	check("delete", "exitstatus", "OK")
	if emu.VMStatus(NodeA6000, vmid) != "" {
		t.Error("proxmoxer's delete left the VM")
	}
}

// TestEmulatorProcess starts the emulator as a process of its own (this
// test binary, calling Serve), as `gpu-testbed up` does, and drives it
// over HTTPS, test controls included.
func TestEmulatorProcess(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	remote := New(Options{TaskDuration: 20 * time.Millisecond, Command: []string{"/bin/sh", "-c", serveEnv + `=1 exec "$0" "$@"`, self}})
	remoteTB := testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{remote}})
	if env := remoteTB.State().Env; env["PM_API_URL"] != remote.URL() || env["PM_CA_CERT_FILE"] == "" || env["PM_API_TOKEN_ID"] != TokenID {
		t.Fatalf("the testbed's env: PM_API_URL %q PM_CA_CERT_FILE %q", env["PM_API_URL"], env["PM_CA_CERT_FILE"])
	}
	local := emu
	emu = remote
	t.Cleanup(func() { emu = local })

	remote.ResetCallCounts()
	remote.FailNextTask("qmstart", "start failed: QEMU exited with code 1", "kvm: -device vfio-pci: failed to setup container")
	vmid := createVM(t, tokenAuth, NodeA6000, gpuVM("remote", "mapping="+MappingA6000First+",pcie=1,rombar=1"))
	st, log := runTask(t, tokenAuth, NodeA6000, "POST", vmPath(NodeA6000, vmid)+"/status/start", nil)
	if st.ExitStatus != "start failed: QEMU exited with code 1" || log[0] != "kvm: -device vfio-pci: failed to setup container" {
		t.Fatalf("start: %s %q", st.ExitStatus, log)
	}
	if remote.VMStatus(NodeA6000, vmid) != "stopped" {
		t.Fatal("the failed start left the VM running")
	}
	if err := remote.SetVMConfigOutOfBand(NodeA6000, vmid, "hostpci0", ""); err != nil {
		t.Fatal(err)
	}
	if conf, found := remote.VMConfig(NodeA6000, vmid); !found || conf["hostpci0"] != "" || conf["name"] != "remote" {
		t.Fatalf("config over HTTPS: %v %v", conf, found)
	}
	if n := remote.CallCounts()["POST /nodes/{node}/qemu/{vmid}/status/start"]; n != 1 {
		t.Fatalf("the process counted %d starts", n)
	}
	if err := remote.DeleteVMOutOfBand(NodeA6000, vmid); err != nil {
		t.Fatal(err)
	}
	if err := remote.DeleteVMOutOfBand(NodeA6000, vmid); err == nil {
		t.Fatal("deleting a VM that is gone succeeded over HTTPS")
	}
	testHeldTask(t)
	var nodes []map[string]any
	ok(t, tokenAuth, http.MethodGet, "/nodes", nil, &nodes)
	if len(nodes) != len(hostProfiles()) {
		t.Fatalf("nodes: %v", nodes)
	}
}

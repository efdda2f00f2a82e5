package pveemu

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// controlPrefix is where the test controls answer, for an emulator that
// runs as a process of its own. They are not PVE calls and need no
// credentials: the port is on loopback, for the testbed's own tests.
const controlPrefix = testbed.ControlPrefix

// FailNextTask makes the next task of that type ("qmcreate", "qmclone",
// "qmconfig", "qmstart", "qmstop", "qmshutdown", "qmdestroy") end with
// exitStatus and these log lines instead of doing its work.
func (e *Emulator) FailNextTask(taskType, exitStatus string, logLines ...string) {
	if e.remote() {
		e.mustControl("fail-next-task", controlArgs{TaskType: taskType, ExitStatus: exitStatus, Log: logLines}, nil)
		return
	}
	e.mu.Lock()
	e.st.failNext[taskType] = taskFailure{exitStatus: exitStatus, log: logLines}
	e.mu.Unlock()
}

// HoldNextTask keeps the next task of that type running, its work not
// done, until ReleaseHeldTasks: as a slow clone or start on a busy node,
// for a client's wait to be cut short (a timeout, Ctrl-C) while the task
// runs. What the request did is done (a clone's config exists, locked).
func (e *Emulator) HoldNextTask(taskType string) {
	if e.remote() {
		e.mustControl("hold-next-task", controlArgs{TaskType: taskType}, nil)
		return
	}
	e.mu.Lock()
	e.st.holdNext[taskType] = true
	e.mu.Unlock()
}

// HeldTasks are the UPIDs of the tasks held now (sorted): a task is held
// from the request that started it until ReleaseHeldTasks.
func (e *Emulator) HeldTasks() []string {
	if e.remote() {
		var out []string
		e.mustControl("held-tasks", controlArgs{}, &out)
		return out
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []string{}
	for upid, t := range e.st.tasks {
		if t.held {
			out = append(out, upid)
		}
	}
	slices.Sort(out)
	return out
}

// ReleaseHeldTasks lets every held task run on (each ends
// Options.TaskDuration later, as any task does) and drops the holds no
// task has taken yet.
func (e *Emulator) ReleaseHeldTasks() {
	if e.remote() {
		e.mustControl("release-held-tasks", controlArgs{}, nil)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.st.tasks {
		t.held = false
	}
	clear(e.st.holdNext)
	close(e.st.release)
	e.st.release = make(chan struct{})
}

// DeleteVMOutOfBand removes a VM as if someone destroyed it behind the
// client's back.
func (e *Emulator) DeleteVMOutOfBand(node string, vmid int) error {
	return e.outOfBand("delete-vm", controlArgs{Node: node, VMID: vmid}, func(v *vm) error {
		v.stop()
		delete(e.st.vms, vmid)
		return nil
	})
}

// SetVMConfigOutOfBand sets a config key ("" deletes it) directly in the
// VM's config, as an edit outside the client would.
func (e *Emulator) SetVMConfigOutOfBand(node string, vmid int, key, value string) error {
	return e.outOfBand("set-vm-config", controlArgs{Node: node, VMID: vmid, Key: key, Value: value}, func(v *vm) error {
		if value == "" {
			delete(v.conf, key)
		} else {
			v.conf[key] = value
		}
		return nil
	})
}

// StopVMOutOfBand stops a running VM at once (as `qm stop` on the node).
func (e *Emulator) StopVMOutOfBand(node string, vmid int) error {
	return e.outOfBand("stop-vm", controlArgs{Node: node, VMID: vmid}, func(v *vm) error {
		v.stop()
		return nil
	})
}

// StartVMOutOfBand starts a stopped VM at once (as `qm start` on the
// node), with the start's checks (a GPU held elsewhere fails it).
func (e *Emulator) StartVMOutOfBand(node string, vmid int) error {
	return e.outOfBand("start-vm", controlArgs{Node: node, VMID: vmid}, func(v *vm) error {
		if err := e.startVM(v, taskLog{&task{}}); err != nil {
			// the message as the task's exit status has it
			return errors.New(strings.TrimRight(err.Error(), "\n"))
		}
		return nil
	})
}

// outOfBand runs change on the VM args names under e.mu, or the test
// control of that name on an emulator that runs as a process of its own.
func (e *Emulator) outOfBand(control string, args controlArgs, change func(v *vm) error) error {
	if e.remote() {
		return e.control(control, args, nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.st.vmAt(args.Node, args.VMID)
	if err != nil {
		return err
	}
	return change(v)
}

// VMConfig is a VM's current config (raw values, pending changes not
// applied); false if it does not exist on that node.
func (e *Emulator) VMConfig(node string, vmid int) (map[string]string, bool) {
	if e.remote() {
		var out struct {
			Config map[string]string `json:"config"`
			Found  bool              `json:"found"`
		}
		e.mustControl("vm-config", controlArgs{Node: node, VMID: vmid}, &out)
		return out.Config, out.Found
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.st.vmAt(node, vmid)
	if err != nil {
		return nil, false
	}
	return maps.Clone(v.conf), true
}

// VMStatus is "running", "stopped", or "" for a VM that does not exist
// on that node.
func (e *Emulator) VMStatus(node string, vmid int) string {
	if e.remote() {
		var out struct {
			Status string `json:"status"`
		}
		e.mustControl("vm-status", controlArgs{Node: node, VMID: vmid}, &out)
		return out.Status
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.st.vmAt(node, vmid)
	if err != nil {
		return ""
	}
	return v.status
}

// CallCounts are the API calls answered since the start or the last
// ResetCallCounts, by "METHOD /pattern" ("GET /nodes/{node}/tasks/{upid}/status").
func (e *Emulator) CallCounts() map[string]int {
	if e.remote() {
		var out map[string]int
		e.mustControl("call-counts", controlArgs{}, &out)
		return out
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.st.calls)
}

// ResetCallCounts starts CallCounts over.
func (e *Emulator) ResetCallCounts() {
	if e.remote() {
		e.mustControl("reset-call-counts", controlArgs{}, nil)
		return
	}
	e.mu.Lock()
	e.st.calls = map[string]int{}
	e.mu.Unlock()
}

// vmAt finds a VM for a control. Caller holds e.mu.
func (s *state) vmAt(node string, vmid int) (*vm, error) {
	v, ok := s.vms[vmid]
	if !ok || v.node != node {
		return nil, fmt.Errorf("VM %d does not exist on node %s", vmid, node)
	}
	return v, nil
}

// controlArgs are every control's arguments.
type controlArgs struct {
	TaskType   string   `json:"task_type,omitempty"`
	ExitStatus string   `json:"exit_status,omitempty"`
	Log        []string `json:"log,omitempty"`
	Node       string   `json:"node,omitempty"`
	VMID       int      `json:"vmid,omitempty"`
	Key        string   `json:"key,omitempty"`
	Value      string   `json:"value,omitempty"`
	Address    string   `json:"address,omitempty"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	ID         string   `json:"id,omitempty"`
}

// serveControl answers POST /_testbed/<name> with the in-process control.
func (e *Emulator) serveControl(w http.ResponseWriter, hr *http.Request) {
	var args controlArgs
	if hr.Method != http.MethodPost {
		http.Error(w, "test controls take POST", http.StatusMethodNotAllowed)
		return
	}
	if err := json.NewDecoder(io.LimitReader(hr.Body, 1<<20)).Decode(&args); err != nil && !errors.Is(err, io.EOF) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out any
	var err error
	switch strings.TrimPrefix(hr.URL.Path, controlPrefix) {
	case "fail-next-task":
		e.FailNextTask(args.TaskType, args.ExitStatus, args.Log...)
	case "hold-next-task":
		e.HoldNextTask(args.TaskType)
	case "held-tasks":
		out = e.HeldTasks()
	case "release-held-tasks":
		e.ReleaseHeldTasks()
	case "delete-vm":
		err = e.DeleteVMOutOfBand(args.Node, args.VMID)
	case "set-vm-config":
		err = e.SetVMConfigOutOfBand(args.Node, args.VMID, args.Key, args.Value)
	case "stop-vm":
		err = e.StopVMOutOfBand(args.Node, args.VMID)
	case "start-vm":
		err = e.StartVMOutOfBand(args.Node, args.VMID)
	case "remove-pci-device":
		err = e.RemovePCIDevice(args.Node, args.Address)
	case "restore-pci-device":
		err = e.RestorePCIDevice(args.Node, args.Address)
	case "move-pci-device":
		err = e.MovePCIDevice(args.Node, args.From, args.To)
	case "mapping":
		entries, found := e.Mapping(args.ID)
		out = map[string]any{"entries": entries, "found": found}
	case "vm-config":
		conf, found := e.VMConfig(args.Node, args.VMID)
		out = map[string]any{"config": conf, "found": found}
	case "vm-status":
		out = map[string]string{"status": e.VMStatus(args.Node, args.VMID)}
	case "call-counts":
		out = e.CallCounts()
	case "reset-call-counts":
		e.ResetCallCounts()
	default:
		http.Error(w, "no such test control", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// remote reports whether the emulator runs as a process of its own, so
// that the test controls go over HTTPS.
func (e *Emulator) remote() bool { return len(e.opts.Command) > 0 }

// mustControl is control for the controls whose signature has no error:
// a test control that fails means the testbed is broken, so it panics.
func (e *Emulator) mustControl(name string, in, out any) {
	if err := e.control(name, in, out); err != nil {
		panic(err)
	}
}

// control calls the test control name on the emulator process, trusting
// the testbed CA (see testbed.CallControl).
func (e *Emulator) control(name string, in, out any) error {
	client, err := e.controlClient()
	if err != nil {
		return err
	}
	return testbed.CallControl(client, "https://127.0.0.1:"+fmt.Sprint(e.port), name, in, out)
}

func (e *Emulator) controlClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(e.caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the testbed CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the testbed CA %s holds no certificate", e.caFile)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

package bootstrap

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// nvidiaRPMUnit is nvidia-persistenced.service from NVIDIA's RPM packaging
// (NVIDIA/yum-packaging-nvidia-persistenced): persistence mode on by default.
const nvidiaRPMUnit = `[Unit]
Description=NVIDIA Persistence Daemon
After=syslog.target

[Service]
Type=forking
ExecStart=/usr/sbin/nvidia-persistenced --user nvidia-persistenced
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced/*
TimeoutSec=300

[Install]
WantedBy=multi-user.target
`

// ubuntuUnit is Ubuntu's nvidia-persistenced.service (nvidia-compute-utils):
// static, started by a udev rule, with --no-persistence-mode.
const ubuntuUnit = `[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target
StopWhenUnneeded=true
Before=systemd-backlight@backlight:nvidia_0.service

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced
`

func persistenceHost(t *testing.T, fleet *nvmltest.Fleet, unitPath, unit string) (*Host, *RecordingRunner) {
	t.Helper()
	h, runner := newTestHost(t)
	h.GPUs = dgxGPUs(t, fleet)
	if unit != "" {
		writeTarget(t, h, unitPath, unit, 0o644)
	}
	return h, runner
}

func TestPersistencePlanSetsEveryGPUThenIsEmpty(t *testing.T) {
	fleet := nvmltest.NewDGXA100() // persistence off on all 8 GPUs
	h, runner := persistenceHost(t, fleet, "/usr/lib/systemd/system/nvidia-persistenced.service", nvidiaRPMUnit)
	steps := []Step{newPersistenceStep()}

	plan, err := MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Count() != 8 {
		t.Fatalf("plan has %d changes, want 8 (one per GPU): %v", plan.Count(), changeCommands(plan[0].Changes))
	}
	for i, c := range plan[0].Changes {
		if c.Action() == nil || !strings.Contains(c.Summary, "GPU-00000000-0000-4000-8000-00000000000"+string(rune('0'+i))) {
			t.Errorf("change %d = %q, want an NVML action for GPU %d", i, c.Summary, i)
		}
	}

	if _, err := Apply(context.Background(), h, steps, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, gpu := range fleet.GPUs {
		if !gpu.Persistence || gpu.PersistenceSetCall != 1 {
			t.Errorf("GPU %d: persistence %v after %d calls, want on after 1", i, gpu.Persistence, gpu.PersistenceSetCall)
		}
	}

	plan, err = MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Empty() {
		t.Errorf("second plan: %v", changeCommands(plan[0].Changes))
	}
	want := "systemctl --root=" + h.Root + " is-enabled nvidia-persistenced"
	for _, c := range runner.Calls {
		if c.String() != want || c.Root != "/" {
			t.Errorf("ran %q (Root %q), want only %q on the build host", c, c.Root, want)
		}
	}
	if len(runner.Calls) != 3 { // plan, apply, plan
		t.Errorf("systemctl ran %d times, want 3: %v", len(runner.Calls), runner.Lines())
	}
}

func TestPersistencePlanSkipsGPUsWithoutPersistenceMode(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for _, d := range fleet.Server.Devices {
		nvmltest.Mock(d).GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) {
			return 0, gonvml.ERROR_NOT_SUPPORTED
		}
	}
	h, _ := persistenceHost(t, fleet, "/usr/lib/systemd/system/nvidia-persistenced.service", nvidiaRPMUnit)
	changes, err := newPersistenceStep().Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 0 {
		t.Errorf("GPUs without persistence mode got %v", changeCommands(changes))
	}
}

func TestPersistencePlanEnablesTheService(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for _, gpu := range fleet.GPUs {
		gpu.Persistence = true
	}
	h, runner := persistenceHost(t, fleet, "/usr/lib/systemd/system/nvidia-persistenced.service", nvidiaRPMUnit)
	runner.Reply("systemctl --root="+h.Root+" is-enabled", Output{ExitCode: 1, Stdout: []byte("disabled\n")})
	changes, err := newPersistenceStep().Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changeCommands(changes), [][]string{{"systemctl --root=" + h.Root + " enable nvidia-persistenced"}})
	if commandsOf(changes[0])[0].Root != "/" {
		t.Errorf("systemctl --root runs with Root %q, want / (not a chroot)", commandsOf(changes[0])[0].Root)
	}
}

func TestPersistenceDropInForUbuntuUnit(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for _, gpu := range fleet.GPUs {
		gpu.Persistence = true
	}
	h, runner := persistenceHost(t, fleet, "/lib/systemd/system/nvidia-persistenced.service", ubuntuUnit)
	runner.Reply("systemctl --root="+h.Root+" is-enabled", Output{Stdout: []byte("static\n")}) // exit 0: the udev rule starts it
	steps := []Step{newPersistenceStep()}

	plan, err := MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "changes", changeCommands(plan[0].Changes), [][]string{{"file " + persistenceDropInPath}})
	want := "# Written by gpu-bootstrap (persistence step). The packaged unit (/lib/systemd/system/nvidia-persistenced.service)\n" +
		"# starts nvidia-persistenced with --no-persistence-mode, which turns\n" +
		"# persistence mode off on every GPU whenever the daemon starts. This keeps\n" +
		"# the packaged command line and turns persistence mode on instead.\n" +
		"[Service]\n" +
		"ExecStart=\n" +
		"ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode --verbose\n"
	if got := string(plan[0].Changes[0].File().New); got != want {
		t.Errorf("drop-in:\n%s\nwant:\n%s", got, want)
	}

	if _, err := Apply(context.Background(), h, steps, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := readPersistencedService(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(svc.DropInOld) != want {
		t.Errorf("the drop-in on disk is %q", svc.DropInOld)
	}
	plan, err = MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Empty() {
		t.Errorf("second plan: %v", changeCommands(plan[0].Changes))
	}
}

func TestPersistenceRefusesALaterDropInThatDisablesIt(t *testing.T) {
	h, _ := persistenceHost(t, nvmltest.NewDGXA100(), "/usr/lib/systemd/system/nvidia-persistenced.service", nvidiaRPMUnit)
	writeTarget(t, h, "/etc/systemd/system/nvidia-persistenced.service.d/zzz-site.conf",
		"[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --no-persistence-mode\n", 0o644)
	_, err := newPersistenceStep().Plan(context.Background(), h)
	if err == nil || !strings.Contains(err.Error(), "zzz-site.conf") {
		t.Errorf("err = %v, want it to name the drop-in that wins", err)
	}
}

func TestPersistenceWaitsForThePendingDriver(t *testing.T) {
	h, runner := newTestHost(t)
	h.GPUs = driverlessGPUs(t, a100)
	steps := []Step{pendingDriverStep{}, newPersistenceStep()}
	plan, err := MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	changes := plan[1].Changes
	equalLines(t, "changes", changeCommands(changes), [][]string{
		{"systemctl --root=" + h.Root + " enable nvidia-persistenced"},
		{"action"},
	})
	if !strings.Contains(changes[1].Note, "nvidia-persistenced") {
		t.Errorf("note = %q, want it to say nvidia-persistenced takes over at boot", changes[1].Note)
	}
	// Applied while the driver is still not loaded: not an error.
	if err := changes[1].Action()(context.Background(), h); err != nil {
		t.Errorf("deferred action without a driver: %v", err)
	}
	if len(runner.Calls) != 0 {
		t.Errorf("planning ran %v", runner.Lines())
	}
}

func TestPersistenceWithoutUnitOrDriverStep(t *testing.T) {
	h, _ := newTestHost(t)
	h.GPUs = driverlessGPUs(t, a100)
	_, err := newPersistenceStep().Plan(context.Background(), h)
	if err == nil || !strings.Contains(err.Error(), persistencedUnit) || !strings.Contains(err.Error(), "driver section") {
		t.Errorf("err = %v, want it to say the unit is missing and how to get it", err)
	}
}

func TestPersistenceWithADriverButNoUnit(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	h, runner := persistenceHost(t, fleet, "", "")
	changes, err := newPersistenceStep().Plan(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 8 {
		t.Fatalf("got %d changes, want 8 NVML actions", len(changes))
	}
	if !strings.Contains(changes[0].Note, "after a reboot") {
		t.Errorf("note = %q, want it to warn that persistence may not survive a reboot", changes[0].Note)
	}
	if len(runner.Calls) != 0 {
		t.Errorf("asked systemctl about a unit that is not there: %v", runner.Lines())
	}
}

func TestSystemctlCommandRoots(t *testing.T) {
	live := systemctlCommand(&Host{Root: "/"}, "enable", "--now", "nvidia-persistenced")
	if live.String() != "systemctl enable --now nvidia-persistenced" || live.Root != "/" {
		t.Errorf("live: %q root %q", live, live.Root)
	}
	image := systemctlCommand(&Host{Root: "/mnt/image"}, "is-enabled", "nvidia-persistenced")
	if image.String() != "systemctl --root=/mnt/image is-enabled nvidia-persistenced" || image.Root != "/" {
		t.Errorf("image: %q root %q", image, image.Root)
	}
}

// pendingDriverStep is a driver step with work left, as far as
// Host.Pending("driver") is concerned.
type pendingDriverStep struct{}

func (pendingDriverStep) Name() string { return "driver" }

func (pendingDriverStep) Plan(context.Context, *Host) ([]Change, error) {
	return []Change{{Summary: "install the driver", Ops: []Op{ActionOp(func(context.Context, *Host) error { return nil })}}}, nil
}

func TestPersistenceServiceOnARunningMachine(t *testing.T) {
	svc := &persistencedService{
		UnitPath:      "/lib/systemd/system/nvidia-persistenced.service",
		ExecStart:     []string{"/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose"},
		ExecStartFrom: "/lib/systemd/system/nvidia-persistenced.service",
	}
	for _, tt := range []struct {
		description  string
		driverLoaded bool
		enable       string
	}{
		{"with the driver loaded the daemon is started now", true, "systemctl enable --now nvidia-persistenced"},
		{"without a driver the daemon would exit, so it is only enabled", false, "systemctl enable nvidia-persistenced"},
	} {
		t.Run(tt.description, func(t *testing.T) {
			runner := &RecordingRunner{}
			runner.Reply("systemctl is-enabled nvidia-persistenced", Output{ExitCode: 1, Stdout: []byte("disabled\n")})
			h := &Host{Root: "/", Runner: runner}
			changes, err := persistenceStep{}.planService(context.Background(), h, svc, tt.driverLoaded)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "changes", changeCommands(changes), [][]string{
				{"file " + persistenceDropInPath},
				{"systemctl daemon-reload", "systemctl try-restart nvidia-persistenced"},
				{tt.enable},
			})
			if got := runner.Lines(); strings.Join(got, ";") != "systemctl is-enabled nvidia-persistenced" {
				t.Errorf("plan ran %v", got)
			}
		})
	}
}

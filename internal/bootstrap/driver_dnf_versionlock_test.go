package bootstrap

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The RHEL 10 packaging's plan, recorded: the versionlock plugin, the lock
// list the step writes, and the commands of an install and a move. What
// they do to a real rpm database is tested in realdnf_rhel10_test.go.

// openStack580EL10 is branch 580's open stack from the rhel10 repository,
// with dnf's versionlock plugin installed.
var openStack580EL10 = []string{
	"nvidia-driver 3:580.126.09-1.el10 nvidia-driver(x86-64)",
	"nvidia-driver-cuda-libs 3:580.126.09-1.el10",
	"libnvidia-ml 3:580.126.09-1.el10 libnvidia-ml.so.1()(64bit)",
	"kmod-nvidia-open-dkms 3:580.126.09-1.el10 nvidia-kmod",
	"nvidia-kmod-common 3:580.126.09-1.el10",
	"nvidia-open 3:580.126.09-1.el10",
	"python3-dnf-plugin-versionlock 0:4.7.0-8.el10",
}

// rhel10Host is a Rocky Linux 10 image root with NVIDIA's repository and
// EPEL set up, the given lock list ("" for none), and rpm answering with
// the given packages.
func rhel10Host(t *testing.T, lock string, installed ...string) *Host {
	t.Helper()
	h, runner := osReleaseHost(t, "rocky-10")
	h.GPUs = driverlessGPUs(t)
	writeTarget(t, h, "/etc/yum.repos.d/cuda-rhel10.repo", "[cuda-rhel10-x86_64]\n", 0o644)
	writeTarget(t, h, epelRepoPath, "[epel]\n", 0o644)
	if lock != "" {
		writeTarget(t, h, dnfVersionlockListPath, lock, 0o644)
	}
	runner.Reply("rpm -qa", rpmInstalled(installed...))
	return h
}

// lockFor is the step's lock list for branch after the user's lines.
func lockFor(user, branch string) string {
	return string(versionlockList([]byte(user), branch))
}

func TestVersionlockListKeepsTheUsersLinesAndLocksOneBranch(t *testing.T) {
	user := "# Added lock on Mon Nov 23 2026\nkmod-nvidia-open-dkms-3:575.51-1.fc41.*\nnvidia-container-toolkit-0:1.17.8-1.*\nbash-0:5.2.26-6.el10.*\n!nvidia-driver-3:580.95.05-1.el10.*\n"
	got := string(versionlockList([]byte(user), "580"))
	for _, kept := range []string{"nvidia-container-toolkit-0:1.17.8-1.*\n", "bash-0:5.2.26-6.el10.*\n", "!nvidia-driver-3:580.95.05-1.el10.*\n", "nvidia-driver-3:580.*\n", "cuda-drivers-3:580.*\n", "kmod-nvidia-open-dkms-3:580.*\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("lock list lacks %q:\n%s", kept, got)
		}
	}
	if strings.Contains(got, "575") {
		t.Errorf("lock list keeps the 575 entry:\n%s", got)
	}
	if b := lockedBranches([]byte(got)); strings.Join(b, " ") != "580" {
		t.Errorf("locked branches %v, want only 580", b)
	}
	// Moving: the old branch's entries and comment go, the new come.
	moved := string(versionlockList([]byte(got), "595"))
	if b := lockedBranches([]byte(moved)); strings.Join(b, " ") != "595" {
		t.Errorf("after the move locked branches %v, want only 595:\n%s", b, moved)
	}
	if strings.Contains(moved, dnfVersionlockHeader+"580") {
		t.Errorf("the move keeps 580's comment:\n%s", moved)
	}
	// Writing it again changes nothing: the plan after apply is empty.
	if again := string(versionlockList([]byte(moved), "595")); again != moved {
		t.Errorf("the list is not stable:\n%s\nthen:\n%s", moved, again)
	}
}

func TestDriverPlanRHEL10Versionlock(t *testing.T) {
	const user = "nvidia-container-toolkit-0:1.17.8-1.*\n"
	tests := []struct {
		description string
		lock        string
		installed   []string
		cfg         DriverConfig
		changes     [][]string
		undo        []string
		wantLock    string // the lock list the last change writes
	}{
		{
			description: "fresh install: the plugin, then the lock and nvidia-open in one change",
			cfg:         DriverConfig{Branch: "580"},
			changes: [][]string{
				{"dnf -y install kernel-devel kernel-headers"},
				{"dnf -y install python3-dnf-plugin-versionlock"},
				{"write " + dnfVersionlockListPath, "dnf -y install --allowerasing nvidia-open", "check"},
			},
			undo:     []string{"check", "remove " + dnfVersionlockListPath},
			wantLock: lockFor("", "580"),
		},
		{
			description: "the stack on the branch, locked, with the plugin: up to date",
			lock:        lockFor(user, "580"), installed: openStack580EL10,
			cfg: DriverConfig{Branch: "580"},
		},
		{
			description: "the stack on the branch under the guide's exact-release lock of another branch: the lock is rewritten, the user's toolkit line kept",
			lock:        "kmod-nvidia-open-dkms-3:575.51-1.fc41.*\n" + user, installed: openStack580EL10,
			cfg:      DriverConfig{Branch: "580"},
			changes:  [][]string{{"file " + dnfVersionlockListPath}},
			wantLock: lockFor(user, "580"),
		},
		{
			description: "the stack on the branch, locked, without the plugin: the plugin only",
			lock:        lockFor("", "580"), installed: openStack580EL10[:len(openStack580EL10)-1],
			cfg:     DriverConfig{Branch: "580"},
			changes: [][]string{{"dnf -y install python3-dnf-plugin-versionlock"}},
		},
		{
			description: "580 to 595: the lock moves, distro-sync moves every locked package, nvidia-open completes it",
			lock:        lockFor(user, "580"), installed: openStack580EL10,
			cfg: DriverConfig{Branch: "595"},
			changes: [][]string{
				{"dnf -y install kernel-devel kernel-headers"},
				{"rewrite " + dnfVersionlockListPath, "dnf -y distro-sync --allowerasing kmod-nvidia-open-dkms libnvidia-ml nvidia-driver nvidia-driver-cuda-libs nvidia-kmod-common nvidia-open", "dnf -y install --allowerasing nvidia-open", "check"},
			},
			undo:     []string{"check", "rewrite " + dnfVersionlockListPath},
			wantLock: lockFor(user, "595"),
		},
		{
			description: "flavor switch on 580: cuda-drivers with --allowerasing, as the guide switches",
			lock:        lockFor(user, "580"), installed: openStack580EL10,
			cfg: DriverConfig{Branch: "580", KernelModules: KernelModulesProprietary},
			changes: [][]string{
				{"dnf -y install kernel-devel kernel-headers"},
				{"dnf -y distro-sync --allowerasing kmod-nvidia-open-dkms libnvidia-ml nvidia-driver nvidia-driver-cuda-libs nvidia-kmod-common nvidia-open", "dnf -y install --allowerasing cuda-drivers", "check"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			h := rhel10Host(t, tt.lock, tt.installed...)
			if err := os.MkdirAll(h.Path("/lib/modules"), 0o755); err != nil {
				t.Fatal(err)
			}
			changes, err := driverStep{cfg: tt.cfg, arch: "amd64"}.Plan(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "changes", changeCommands(changes), tt.changes)
			if len(changes) == 0 {
				return
			}
			last := changes[len(changes)-1]
			if got := strings.Join(opLines(last.Undo), "\n"); got != strings.Join(tt.undo, "\n") {
				t.Errorf("undo:\n%s\nwant:\n%s", got, strings.Join(tt.undo, "\n"))
			}
			if tt.wantLock != "" {
				var written string
				for _, op := range last.Ops {
					if f, ok := op.(FileOp); ok && f.File.Path == dnfVersionlockListPath {
						written = string(f.File.New)
					}
				}
				if written != tt.wantLock {
					t.Errorf("lock list written:\n%s\nwant:\n%s", written, tt.wantLock)
				}
			}
		})
	}
}

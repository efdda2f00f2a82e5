package proxmox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// emu is the testbed's Proxmox VE emulator: a real HTTPS server the
// library's client talks to, verified against the testbed CA.
var emu *pveemu.Emulator

func TestMain(m *testing.M) {
	emu = pveemu.New(pveemu.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{emu}}, nil))
}

// testbedSettings are the provider's settings from the emulator's
// environment, TLS verified against the testbed CA.
func testbedSettings(t *testing.T) Settings {
	t.Helper()
	testbed.SkipIfUnavailable(t)
	env := emu.Env()
	ca, err := os.ReadFile(env["PM_CA_CERT_FILE"])
	require.NoError(t, err)
	return Settings{Endpoint: env["PM_API_URL"], CACertificatePEM: string(ca), UserAgent: "terraform-provider-gpu-test"}
}

// tokenClient acts as the privilege-separated token terraform@pve!role,
// which has exactly the documented role (privileges.go).
func tokenClient(t *testing.T) *Client {
	t.Helper()
	s := testbedSettings(t)
	s.TokenID, s.TokenSecret = pveemu.RoleTokenID, pveemu.RoleTokenSecret
	c, err := s.Connect(context.Background())
	require.NoError(t, err)
	return c
}

// rootClient logs in as root@pam with a password (ticket).
func rootClient(t *testing.T) *Client {
	t.Helper()
	s := testbedSettings(t)
	s.Username, s.Password = pveemu.RootUser, pveemu.RootPassword
	c, err := s.Connect(context.Background())
	require.NoError(t, err)
	return c
}

// testCtx bounds one test's calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createdVM creates spec, which must succeed, and destroys it when the
// test ends; spec comes back with its VM ID.
func createdVM(t *testing.T, c *Client, spec VMSpec) (VMSpec, VM) {
	t.Helper()
	vm, err := c.CreateVM(testCtx(t), spec)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)
	spec.VMID = vm.VMID
	return spec, vm
}

// deleteAtEnd destroys the VM when the test ends (GPUs are shared between
// tests: one running VM per device).
func deleteAtEnd(t *testing.T, c *Client, node string, vmid int) {
	t.Cleanup(func() {
		if vmid == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DeleteVM(ctx, node, vmid); err != nil {
			t.Errorf("cleaning up VM %d on %s: %v", vmid, node, err)
		}
	})
}

// gpuVM is a q35/OVMF VM on pve-a6000 cloned from the cloud template.
func gpuVM(name string, gpus ...GPU) VMSpec {
	return VMSpec{
		Node: "pve-a6000", Name: name, Clone: &Clone{Source: "ubuntu-2404-cloud", Full: true},
		Cores: 4, Sockets: 1, CPUType: "host", MemoryMiB: 16384, Machine: "q35", BIOS: "ovmf",
		EFIDisk:   &EFIDisk{Storage: "local-lvm", PreEnrolledKeys: false},
		Networks:  []Network{{Model: "virtio", Bridge: "vmbr0"}},
		CloudInit: &CloudInit{Storage: "local-lvm", User: "ubuntu", IPConfig: []string{"ip=dhcp"}},
		Tags:      []string{"gpu"}, Started: true, GPUs: gpus,
	}
}

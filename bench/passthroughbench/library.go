package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"

	pve "github.com/Telmate/proxmox-api-go/proxmox"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// libraryWay is the baseline: the same clone, configuration and start
// through Telmate/proxmox-api-go's own calls, each of which waits for its
// task with the library's fixed 2-second sleep. The calls are the ones the
// library marks deprecated; their replacements (VmRef.CloneQemu,
// GuestInterface.Start) wait the same way (clientAPI.waitForCompletion
// sleeps TaskStatusCheckInterval between reads) and take typed configs
// this baseline does not need.
type libraryWay struct{ client *pve.Client }

// templateVMID is the emulator's template on benchNode.
const templateVMID = 9000

func newLibraryWay(url string, caPEM []byte) (*libraryWay, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the testbed CA is not PEM")
	}
	client, err := pve.NewClient(url, nil, "", &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, "", 300, false)
	if err != nil {
		return nil, err
	}
	var token pve.ApiTokenID
	if err := token.Parse(pveemu.TokenID); err != nil {
		return nil, err
	}
	client.SetAPIToken(token, pve.ApiTokenSecret(pveemu.TokenSecret))
	return &libraryWay{client: client}, nil
}

func (l *libraryWay) name() string { return "Telmate CloneQemuVm + SetVmConfig + StartVm" }

func (l *libraryWay) createAndStart(ctx context.Context, vmid int) error {
	template := pve.NewVmRef(pve.GuestID(templateVMID))
	template.SetNode(benchNode)
	template.SetVmType(pve.GuestQemu)
	if _, err := l.client.CloneQemuVm(ctx, //nolint:staticcheck // the baseline; see libraryWay
		template, map[string]any{"newid": vmid, "name": "bench", "target": benchNode}); err != nil {
		return fmt.Errorf("clone: %w", err)
	}
	vm := pve.NewVmRef(pve.GuestID(vmid))
	vm.SetNode(benchNode)
	vm.SetVmType(pve.GuestQemu)
	if _, err := l.client.SetVmConfig(vm, map[string]any{
		"cores": 4, "sockets": 1, "cpu": "host", "memory": 8192, "balloon": 0, "machine": "q35", "bios": "ovmf",
		"hostpci0": "mapping=" + benchMapping + ",pcie=1,rombar=1",
	}); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	status, err := l.client.StartVm(ctx, vm) //nolint:staticcheck // the baseline; see libraryWay
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if status != "OK" && !isWarnings(status) {
		return fmt.Errorf("start task of VM %s ended %q", strconv.Itoa(vmid), status)
	}
	return nil
}

func isWarnings(status string) bool { return len(status) >= 8 && status[:8] == "WARNINGS" }

package main

import (
	"context"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// backendWay is what gpu_passthrough_vm's create runs: proxmox.CreateVM.
type backendWay struct{ client *proxmox.Client }

func newBackendWay(ctx context.Context, url string, caPEM []byte) (*backendWay, error) {
	client, err := proxmox.Settings{
		Endpoint: url, TokenID: pveemu.TokenID, TokenSecret: pveemu.TokenSecret,
		CACertificatePEM: string(caPEM), UserAgent: "passthroughbench",
	}.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &backendWay{client: client}, nil
}

func (b *backendWay) name() string { return "internal/proxmox CreateVM" }

func (b *backendWay) createAndStart(ctx context.Context, vmid int) error {
	_, err := b.client.CreateVM(ctx, proxmox.VMSpec{
		Node: benchNode, VMID: vmid, Name: "bench", Clone: &proxmox.Clone{Source: benchTemplate},
		Cores: 4, Sockets: 1, CPUType: "host", MemoryMiB: 8192, Machine: "q35", BIOS: "ovmf",
		GPUs:    []proxmox.GPU{{Mapping: benchMapping, PCIE: true, ROMBar: true, AllFunctions: true}},
		Started: true,
	})
	return err
}

func (b *backendWay) destroy(ctx context.Context, vmid int) error {
	return b.client.DeleteVM(ctx, benchNode, vmid)
}

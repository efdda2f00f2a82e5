package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// pveDescriptionMax is the maxLength of a mapping's description in PVE's
// API schema (POST /cluster/mapping/pci, description).
const pveDescriptionMax = 4096

func pciMappingSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "A Proxmox VE cluster PCI resource mapping (Datacenter → Resource Mappings, `/cluster/mapping/pci`) of " +
			"NVIDIA GPUs: what `gpu_passthrough_vm` passes with `gpu { mapping = ... }`, which an API token with `Mapping.Use` may " +
			"use (raw PCI addresses need `root@pam`'s password). Several devices on one node make a GPU pool: a VM that uses the " +
			"mapping gets the first one no running VM holds. The devices are chosen with a `select` block (a product on some or every " +
			"node) or `device` blocks (node and address), resolved at plan time from the nodes' hardware, so each entry's `id`, " +
			"`subsystem-id`, `iommugroup` and `path` are what PVE checks at a VM's start. A card that is pulled or moved shows in the " +
			"next plan.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The mapping ID (`name`) once the mapping exists, the import ID. Give it to " +
					"`gpu_passthrough_vm`'s `gpu.mapping` (`mapping = gpu_pci_mapping.pool.id`), so that the VM's plan waits for the mapping.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Mapping ID, e.g. `l40s-pool`: a letter, then letters, digits, `-` and `_` (PVE's `pve-configid`). " +
					"`gpu_passthrough_vm` names it in `gpu.mapping`. Changing it replaces the mapping.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(2), stringvalidator.RegexMatches(pveMappingPattern,
					"must be a mapping ID: a letter, then at least one letter, digit, '-' or '_'")},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"description": schema.StringAttribute{
				Optional: true, MarkdownDescription: "Description of the mapping, shown in the web UI. Changes in place.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, pveDescriptionMax)},
			},
			"mdev": schema.BoolAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Mark the devices as providing mediated devices (NVIDIA vGPU), so VMs may take vGPU instances " +
					"(`gpu.mdev`); a VM without `gpu.mdev` still gets a whole device. PVE requires the flag to match the devices (a " +
					"mismatch fails every VM's start): unset, it is what the nodes report for them, `true` when they offer vGPU types; " +
					"set, a contrary value is a plan error, and so are devices of both kinds in one mapping. Changes in place.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
			"live_migration_capable": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Mark the devices as able to be live-migrated (`live-migration-capable`, experimental in PVE: it " +
					"needs hardware and driver support). Defaults to `false`. Changes in place.",
			},
			"entries": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The mapping's entries (its `map`), one per device, as resolved from the nodes' hardware at plan " +
					"time and as PVE holds them after apply. A device that is no longer there (pulled, or moved: with `select` it shows " +
					"at its new address) is a planned change.",
				NestedObject: schema.NestedAttributeObject{Attributes: pciMappingEntryAttributes()},
			},
		},
		Blocks: map[string]schema.Block{
			"select": schema.ListNestedBlock{
				MarkdownDescription: "Map every NVIDIA GPU of a product: on `nodes`, or on every node of the cluster. Re-resolved at " +
					"every plan: a card added or pulled changes the entries. Exactly one of `select` and `device`.",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"product": schema.StringAttribute{
						Required: true,
						MarkdownDescription: "The product as the node's PCI database names it (`gpu_inventory`'s `product`, e.g. " +
							"`AD102GL [L40S]`): a substring, case-insensitive (`L40S`), or a regular expression between slashes " +
							"(`/A6000|L40S/`).",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 256), productSelectorValidator{}},
					},
					"nodes": schema.ListAttribute{
						Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Nodes to map devices on, e.g. `[\"pve-l40s\", \"pve-l40s-b\"]`. Unset, every node of the cluster.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
							listvalidator.ValueStringsAre(stringvalidator.RegexMatches(pveNodeNamePattern, "must be a Proxmox node name, e.g. pve1"))},
					},
				}},
			},
			"device": schema.ListNestedBlock{
				MarkdownDescription: "One device of the mapping, by node and address (`gpu_inventory`'s `node` and `device`). Several " +
					"on one node make a pool. Exactly one of `select` and `device`. An import has these.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"node": schema.StringAttribute{
						Required: true, MarkdownDescription: "Node of the device, e.g. `pve-l40s`.",
						Validators: []validator.String{stringvalidator.RegexMatches(pveNodeNamePattern, "must be a Proxmox node name, e.g. pve1")},
					},
					"address": schema.StringAttribute{
						Required: true,
						MarkdownDescription: "Host PCI address: `0000:41:00` maps the whole device (the GPU and its audio function), " +
							"`0000:41:00.0` one function. Must be an NVIDIA display or 3D controller.",
						Validators: []validator.String{stringvalidator.RegexMatches(pciAddressPattern,
							"must be a PCI address in lowercase hex: 0000:41:00 (the whole device) or 0000:41:00.0 (one function)")},
					},
				}},
			},
			"timeouts": resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
				"How long to wait for Proxmox VE's answer to the create, update and delete (default 2m each). Positive durations as "+
					"Go writes them, e.g. `90s`, `5m`."),
		},
	}
}

func pciMappingEntryAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"node":         str("Node of the device."),
		"path":         str("Host PCI address PVE passes: the whole device (`0000:41:00`) unless a function was given."),
		"id":           str("Vendor and device ID PVE expects there, e.g. `10de:26b9`."),
		"subsystem_id": str("Subsystem vendor and device ID PVE expects there, e.g. `10de:1851`."),
		"iommu_group":  schema.Int64Attribute{Computed: true, MarkdownDescription: "IOMMU group PVE expects the device in."},
		"product":      str("Product name from the node's PCI database, e.g. `AD102GL [L40S]`; empty when the device is gone."),
		"vm": schema.Int64Attribute{
			Computed: true,
			MarkdownDescription: "VM ID of the running VM that holds the device now (passed through whole); null when none does " +
				"(vGPU instances do not hold it). Unknown in a plan that changes the entries.",
		},
	}
}

// pciMappingEntryObjectType is the type of one element of entries.
var pciMappingEntryObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"node": types.StringType, "path": types.StringType, "id": types.StringType, "subsystem_id": types.StringType,
	"iommu_group": types.Int64Type, "product": types.StringType, "vm": types.Int64Type,
}}

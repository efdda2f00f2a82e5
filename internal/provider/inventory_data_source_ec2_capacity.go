package provider

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds gpu_inventory's capacity block (source "ec2"): the
// account's capacity reservations and Capacity Blocks for NVIDIA GPU types,
// and the Capacity Block offerings EC2 sells. Opt-in: the catalog read makes
// none of these calls.

// inventoryCapacitySorts are the orders of capacity_block_offerings, the first the default.
var inventoryCapacitySorts = []string{"start", "price"}

// inventoryCapacityModel is the capacity block.
type inventoryCapacityModel struct {
	Reservations  types.Bool   `tfsdk:"reservations"`
	Details       types.Bool   `tfsdk:"details"`
	Offerings     types.Bool   `tfsdk:"offerings"`
	InstanceCount types.Int64  `tfsdk:"instance_count"`
	DurationHours types.Int64  `tfsdk:"duration_hours"`
	StartAfter    types.String `tfsdk:"start_after"`
	EndBefore     types.String `tfsdk:"end_before"`
	Sort          types.String `tfsdk:"sort"`
}

type inventoryReservationModel struct {
	ID                    string   `tfsdk:"id"`
	ARN                   string   `tfsdk:"arn"`
	InstanceType          string   `tfsdk:"instance_type"`
	GPUProduct            string   `tfsdk:"gpu_product"`
	GPUCount              int64    `tfsdk:"gpu_count"`
	AvailabilityZone      string   `tfsdk:"availability_zone"`
	TotalInstances        int64    `tfsdk:"total_instances"`
	AvailableInstances    int64    `tfsdk:"available_instances"`
	StartDate             string   `tfsdk:"start_date"`
	EndDate               string   `tfsdk:"end_date"`
	State                 string   `tfsdk:"state"`
	ReservationType       string   `tfsdk:"reservation_type"`
	Tenancy               string   `tfsdk:"tenancy"`
	InstanceMatchCriteria string   `tfsdk:"instance_match_criteria"`
	CapacityBlockID       string   `tfsdk:"capacity_block_id"`
	UltraServerType       string   `tfsdk:"ultraserver_type"`
	InterconnectStatus    string   `tfsdk:"interconnect_status"`
	NetworkNodes          []string `tfsdk:"network_nodes"`
}

type inventoryOfferingModel struct {
	ID               string  `tfsdk:"id"`
	InstanceType     string  `tfsdk:"instance_type"`
	GPUProduct       string  `tfsdk:"gpu_product"`
	GPUCount         int64   `tfsdk:"gpu_count"`
	AvailabilityZone string  `tfsdk:"availability_zone"`
	InstanceCount    int64   `tfsdk:"instance_count"`
	DurationHours    int64   `tfsdk:"duration_hours"`
	StartDate        string  `tfsdk:"start_date"`
	EndDate          string  `tfsdk:"end_date"`
	UpfrontFee       float64 `tfsdk:"upfront_fee"`
	Currency         string  `tfsdk:"currency"`
	Tenancy          string  `tfsdk:"tenancy"`
}

func inventoryCapacityBlock() schema.Block {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Source `ec2`: also list capacity (each list is opt-in, so a plain catalog read makes no capacity call). " +
			"`filter.gpu_products` and `filter.availability_zones` select reservations and offerings as they select instance types; " +
			"only NVIDIA GPU instance types are listed. Buying a block stays with the AWS provider's `aws_ec2_capacity_block_reservation`.",
		Attributes: map[string]schema.Attribute{
			"reservations": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "List the account's capacity reservations and Capacity Blocks for ML of NVIDIA GPU types into " +
					"`capacity_reservations` (EC2 DescribeCapacityReservations). Default `false`.",
			},
			"details": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "With `reservations`: also read each Capacity Block's UltraServer type and interconnect status " +
					"(DescribeCapacityBlocks, DescribeCapacityBlockStatus) and the network topology EC2 gives for a reservation " +
					"(DescribeCapacityReservationTopology; only some instance types and only pending or active reservations have one). Default `false`.",
			},
			"offerings": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "List the Capacity Blocks EC2 offers to sell into `capacity_block_offerings` (EC2 DescribeCapacityBlockOfferings, " +
					"one call per NVIDIA GPU instance type that passes the filter: narrow it with `filter.gpu_products`). Needs `instance_count` and " +
					"`duration_hours`, as EC2 does. Default `false`.",
			},
			"instance_count": schema.Int64Attribute{
				CustomType: wholeNumberType{},
				Optional:   true,
				MarkdownDescription: "Offerings: instances in the block; EC2 sells " + int32List(eks.CapacityBlockInstanceCounts) + ". " +
					"Reservations: keep those with at least this many available instances.",
			},
			"duration_hours": schema.Int64Attribute{
				CustomType: wholeNumberType{},
				Optional:   true,
				MarkdownDescription: "Offerings: the block's length in hours; EC2 sells whole days up to 14 (24 to 336) and whole weeks up to 182 days " +
					"(504, 672, ... 4368).",
			},
			"start_after": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "RFC 3339 time, e.g. `2026-12-01T00:00:00Z`. Offerings: the earliest start (EC2's StartDateRange). " +
					"Reservations: keep those that end after it (or have no end).",
				Validators: []validator.String{rfc3339Validator{}},
			},
			"end_before": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "RFC 3339 time. Offerings: the latest end (EC2's EndDateRange). Reservations: keep those that start before it.",
				Validators:          []validator.String{rfc3339Validator{}},
			},
			"sort": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Order of `capacity_block_offerings`. Valid values are: " + backtickList(inventoryCapacitySorts) +
					". `start` (default): earliest start first, then cheapest. `price`: lowest upfront fee first, then earliest. " +
					"`capacity_reservations` are always ordered by start.",
				Validators: []validator.String{stringvalidator.OneOf(inventoryCapacitySorts...)},
			},
		},
	}
}

func inventoryReservationAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"id":                      str("Capacity reservation ID (`cr-...`): what `gpu_node_group` targets."),
		"arn":                     str("Capacity reservation ARN."),
		"instance_type":           str("EC2 instance type, e.g. `p5.48xlarge`."),
		"gpu_product":             str("NVIDIA GPU model as EC2 names it, e.g. `H100`."),
		"gpu_count":               num("NVIDIA GPUs per instance."),
		"availability_zone":       str("Availability Zone of the reservation."),
		"total_instances":         num("Instances the reservation holds."),
		"available_instances":     num("Instances still free to launch into it."),
		"start_date":              str("When the reservation starts (RFC 3339, UTC)."),
		"end_date":                str("When it ends (RFC 3339, UTC); empty when it has no end date. A Capacity Block's instances are reclaimed at its end."),
		"state":                   str("EC2's state: `active`, `scheduled`, `expired`, `pending`, `payment-pending`, `failed`, ..."),
		"reservation_type":        str("`default` (an On-Demand Capacity Reservation) or `capacity-block` (a Capacity Block for ML)."),
		"tenancy":                 str("`default` or `dedicated`."),
		"instance_match_criteria": str("`open` (matching instances use it) or `targeted` (only instances that name it; always so for blocks)."),
		"capacity_block_id":       str("The Capacity Block (`cb-...`) a capacity-block reservation belongs to, when EC2 gives it; else empty."),
		"ultraserver_type":        str("With `capacity.details`: the block's EC2 UltraServer type; empty for an instance block or without details."),
		"interconnect_status":     str("With `capacity.details`: the block's interconnect status, `ok`, `impaired` or `insufficient-data`; empty without."),
		"network_nodes": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "With `capacity.details`: the network nodes EC2 placed the capacity under, top of the tree first " +
				"(reservations with the same nodes are closer); null when EC2 gives no topology for it.",
		},
	}
}

func inventoryOfferingAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"id":                str("Capacity Block offering ID: what `aws_ec2_capacity_block_reservation`'s `capacity_block_offering_id` takes."),
		"instance_type":     str("EC2 instance type."),
		"gpu_product":       str("NVIDIA GPU model as EC2 names it."),
		"gpu_count":         num("NVIDIA GPUs per instance."),
		"availability_zone": str("Availability Zone of the block."),
		"instance_count":    num("Instances in the block."),
		"duration_hours":    num("Length of the block in hours."),
		"start_date":        str("When the block would start (RFC 3339, UTC)."),
		"end_date":          str("When it would end (RFC 3339, UTC)."),
		"upfront_fee":       schema.Float64Attribute{Computed: true, MarkdownDescription: "Price of the whole block, paid upfront, in `currency`."},
		"currency":          str("Currency of `upfront_fee`, e.g. `USD`."),
		"tenancy":           str("`default` or `dedicated`."),
	}
}

func inventoryReservationObjectType() attr.Type {
	return schema.NestedAttributeObject{Attributes: inventoryReservationAttributes()}.Type()
}

func inventoryOfferingObjectType() attr.Type {
	return schema.NestedAttributeObject{Attributes: inventoryOfferingAttributes()}.Type()
}

// setCapacityOutputsNull nulls capacity_reservations and capacity_block_offerings.
func (m *inventoryModel) setCapacityOutputsNull() {
	m.CapacityReservations = types.ListNull(inventoryReservationObjectType())
	m.CapacityBlockOfferings = types.ListNull(inventoryOfferingObjectType())
}

// validateCapacity checks the capacity block at plan time.
func (m *inventoryModel) validateCapacity() diag.Diagnostics {
	var diags diag.Diagnostics
	c := m.Capacity
	if c == nil {
		return diags
	}
	at := path.Root("capacity")
	if !m.Source.IsUnknown() && !m.Source.IsNull() && m.Source.ValueString() != "ec2" {
		diags.AddAttributeError(at, "Invalid gpu_inventory capacity",
			"the capacity block lists EC2 capacity reservations and Capacity Block offerings: it applies with source = \"ec2\" only. Remove it")
		return diags
	}
	if !c.Reservations.ValueBool() && !c.Reservations.IsUnknown() && !c.Offerings.ValueBool() && !c.Offerings.IsUnknown() {
		diags.AddAttributeError(at, "Invalid gpu_inventory capacity",
			"the capacity block asks for nothing: set reservations = true (the account's reservations and blocks), offerings = true "+
				"(Capacity Blocks to buy), or both")
	}
	offerings := c.Offerings.ValueBool()
	if offerings && c.InstanceCount.IsNull() {
		diags.AddAttributeError(at.AtName("instance_count"), "Invalid gpu_inventory capacity",
			"offerings = true needs instance_count: EC2 quotes a Capacity Block for a number of instances ("+int32List(eks.CapacityBlockInstanceCounts)+")")
	}
	if offerings && c.DurationHours.IsNull() {
		diags.AddAttributeError(at.AtName("duration_hours"), "Invalid gpu_inventory capacity",
			"offerings = true needs duration_hours: EC2 quotes a Capacity Block for a length, e.g. 24 (one day) or 168 (one week)")
	}
	if known(c.InstanceCount) && offerings && !slices.Contains(eks.CapacityBlockInstanceCounts, int32(min(c.InstanceCount.ValueInt64(), 1<<30))) {
		diags.AddAttributeError(at.AtName("instance_count"), "Invalid gpu_inventory capacity",
			fmt.Sprintf("instance_count = %d: EC2 sells Capacity Blocks of %s instances", c.InstanceCount.ValueInt64(), int32List(eks.CapacityBlockInstanceCounts)))
	}
	if known(c.InstanceCount) && c.InstanceCount.ValueInt64() < 1 {
		diags.AddAttributeError(at.AtName("instance_count"), "Invalid gpu_inventory capacity",
			fmt.Sprintf("instance_count = %d: give 1 or more", c.InstanceCount.ValueInt64()))
	}
	if known(c.DurationHours) && !eks.CapacityBlockDurationValid(int32(max(min(c.DurationHours.ValueInt64(), 1<<30), -1))) {
		diags.AddAttributeError(at.AtName("duration_hours"), "Invalid gpu_inventory capacity",
			fmt.Sprintf("duration_hours = %d: EC2 sells Capacity Blocks of whole days up to 14 days (24, 48, ... 336 hours) "+
				"and of whole weeks up to 182 days (504, 672, ... 4368 hours)", c.DurationHours.ValueInt64()))
	}
	if !c.Details.IsNull() && !c.Reservations.ValueBool() && !c.Reservations.IsUnknown() {
		diags.AddAttributeError(at.AtName("details"), "Invalid gpu_inventory capacity",
			"details adds block status and topology to capacity_reservations: set reservations = true or remove it")
	}
	if !offerings && !c.Offerings.IsUnknown() {
		if !c.DurationHours.IsNull() {
			diags.AddAttributeError(at.AtName("duration_hours"), "Invalid gpu_inventory capacity",
				"duration_hours applies to offerings only: set offerings = true or remove it")
		}
		if !c.Sort.IsNull() {
			diags.AddAttributeError(at.AtName("sort"), "Invalid gpu_inventory capacity",
				"sort orders capacity_block_offerings: set offerings = true or remove it (capacity_reservations are ordered by start)")
		}
	}
	if from, to, ok := c.dates(); ok && !from.IsZero() && !to.IsZero() && !to.After(from) {
		diags.AddAttributeError(at.AtName("end_before"), "Invalid gpu_inventory capacity",
			fmt.Sprintf("end_before (%s) is not after start_after (%s): nothing could start and end between them", c.EndBefore.ValueString(), c.StartAfter.ValueString()))
	}
	return diags
}

// dates parses start_after and end_before; ok is false while one is unknown
// or not a time (its validator says so).
func (c *inventoryCapacityModel) dates() (from, to time.Time, ok bool) {
	for _, p := range []struct {
		v   types.String
		out *time.Time
	}{{c.StartAfter, &from}, {c.EndBefore, &to}} {
		if p.v.IsUnknown() {
			return from, to, false
		}
		if p.v.IsNull() {
			continue
		}
		t, err := time.Parse(time.RFC3339, p.v.ValueString())
		if err != nil {
			return from, to, false
		}
		*p.out = t
	}
	return from, to, true
}

// readCapacity fills capacity_reservations and capacity_block_offerings as
// the capacity block asks; instanceTypes are the catalog's types that passed
// the filter, the ones offerings are asked for.
func (m *inventoryModel) readCapacity(ctx context.Context, client *eks.Client, instanceTypes []string, diags *diag.Diagnostics) {
	m.setCapacityOutputsNull()
	c := m.Capacity
	if c == nil {
		return
	}
	from, to, _ := c.dates()
	var gpuProducts, zones []string
	if m.Filter != nil {
		gpuProducts = stringsOf(ctx, m.Filter.GPUProducts)
		zones = stringsOf(ctx, m.Filter.AvailabilityZones)
	}
	if c.Reservations.ValueBool() {
		rs, err := client.CapacityReservations(ctx, eks.CapacityFilter{
			NVIDIAGPUs: true, GPUProducts: gpuProducts, AvailabilityZones: zones,
			MinAvailableInstances: int32(c.InstanceCount.ValueInt64()), From: from, To: to,
			BlockDetails: c.Details.ValueBool(), Topology: c.Details.ValueBool(),
		})
		if err != nil {
			diags.AddError("reading EC2 capacity reservations", err.Error())
			return
		}
		list, dd := types.ListValueFrom(ctx, inventoryReservationObjectType(), inventoryReservations(rs))
		diags.Append(dd...)
		m.CapacityReservations = list
	}
	if c.Offerings.ValueBool() {
		offerings := []eks.CapacityBlockOffering{}
		if len(instanceTypes) > 0 {
			var err error
			offerings, err = client.CapacityBlockOfferings(ctx, eks.OfferingFilter{
				InstanceTypes: instanceTypes, GPUProducts: gpuProducts, AvailabilityZones: zones,
				InstanceCount: int32(c.InstanceCount.ValueInt64()), DurationHours: int32(c.DurationHours.ValueInt64()), From: from, To: to,
			})
			if err != nil {
				diags.AddError("reading EC2 Capacity Block offerings", err.Error())
				return
			}
		}
		if c.Sort.ValueString() == "price" {
			slices.SortStableFunc(offerings, eks.CompareOfferingsByPrice)
		}
		models, err := inventoryOfferings(offerings)
		if err != nil {
			diags.AddError("reading EC2 Capacity Block offerings", err.Error())
			return
		}
		list, dd := types.ListValueFrom(ctx, inventoryOfferingObjectType(), models)
		diags.Append(dd...)
		m.CapacityBlockOfferings = list
	}
}

func inventoryReservations(rs []eks.CapacityReservation) []inventoryReservationModel {
	out := make([]inventoryReservationModel, 0, len(rs))
	for _, r := range rs {
		m := inventoryReservationModel{
			ID: r.ID, ARN: r.ARN, InstanceType: r.InstanceType, GPUProduct: r.GPU.Name, GPUCount: int64(r.GPU.Count),
			AvailabilityZone: r.AvailabilityZone, TotalInstances: int64(r.TotalInstances), AvailableInstances: int64(r.AvailableInstances),
			StartDate: rfc3339(r.Start), EndDate: rfc3339(r.End), State: r.State, ReservationType: r.ReservationType,
			Tenancy: r.Tenancy, InstanceMatchCriteria: r.InstanceMatchCriteria, CapacityBlockID: r.CapacityBlockID,
		}
		if r.Block != nil {
			m.UltraServerType, m.InterconnectStatus = r.Block.UltraServerType, r.Block.InterconnectStatus
		}
		if r.Topology != nil {
			m.NetworkNodes = append([]string{}, r.Topology.NetworkNodes...)
		}
		out = append(out, m)
	}
	return out
}

func inventoryOfferings(os []eks.CapacityBlockOffering) ([]inventoryOfferingModel, error) {
	out := make([]inventoryOfferingModel, 0, len(os))
	for _, o := range os {
		fee, err := strconv.ParseFloat(o.UpfrontFee, 64)
		if err != nil {
			return nil, fmt.Errorf("EC2 answered upfront fee %q for Capacity Block offering %s, not a number: %w", o.UpfrontFee, o.ID, err)
		}
		out = append(out, inventoryOfferingModel{
			ID: o.ID, InstanceType: o.InstanceType, GPUProduct: o.GPU.Name, GPUCount: int64(o.GPU.Count),
			AvailabilityZone: o.AvailabilityZone, InstanceCount: int64(o.InstanceCount), DurationHours: int64(o.DurationHours),
			StartDate: rfc3339(o.Start), EndDate: rfc3339(o.End), UpfrontFee: fee, Currency: o.CurrencyCode, Tenancy: o.Tenancy,
		})
	}
	return out, nil
}

// rfc3339 writes t in UTC; the zero time (no date) is "".
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func int32List(ns []int32) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, ", ")
}

// rfc3339Validator refuses a string that is not an RFC 3339 time.
type rfc3339Validator struct{}

func (rfc3339Validator) Description(context.Context) string {
	return "an RFC 3339 time, e.g. 2026-12-01T00:00:00Z"
}
func (v rfc3339Validator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (rfc3339Validator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := time.Parse(time.RFC3339, req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid time",
			fmt.Sprintf("%q is not an RFC 3339 time: write it as 2026-12-01T00:00:00Z (or with an offset, 2026-12-01T09:00:00+09:00)", req.ConfigValue.ValueString()))
	}
}

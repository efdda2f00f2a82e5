package provider

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds what capacity_reservation does to gpu_node_group's
// create, read, update, delete and import: the launch template that
// targets the reservation (internal/eks/launch_template.go makes it), and
// the reservation's facts in the state. The plan-time checks are in
// node_group_capacity_plan.go.

// capacity is the group's capacity_reservation block, or nil.
func (m *nodeGroupModel) capacity() *nodeGroupCapacityModel {
	if len(m.CapacityReservation) != 1 {
		return nil
	}
	return &m.CapacityReservation[0]
}

// validateCapacity checks capacity_type against capacity_reservation as
// written (ValidateConfig): a block needs one, SPOT cannot use one.
func (m *nodeGroupModel) validateCapacity() diag.Diagnostics {
	var diags diag.Diagnostics
	ct := m.CapacityType
	if ct.IsUnknown() {
		return diags
	}
	switch {
	case ct.ValueString() == nodeGroupCapacityTypeBlock && len(m.CapacityReservation) == 0:
		diags.AddAttributeError(path.Root("capacity_type"), "Invalid gpu_node_group capacity_type",
			`capacity_type "CAPACITY_BLOCK" launches into a Capacity Block for ML, which EKS takes only through a launch template: `+
				`add capacity_reservation { id = "cr-..." } with the block's ID (gpu_inventory with source = "ec2" lists the account's blocks), `+
				`and the provider makes the template`)
	case len(m.CapacityReservation) == 1 && !ct.IsNull() && ct.ValueString() != nodeGroupCapacityTypeBlock && ct.ValueString() != nodeGroupCapacityTypeOnDemand:
		diags.AddAttributeError(path.Root("capacity_type"), "Invalid gpu_node_group capacity_type",
			fmt.Sprintf(`capacity_type %q cannot launch into a capacity reservation: set capacity_type = "CAPACITY_BLOCK" for a Capacity Block `+
				`or "ON_DEMAND" for an On-Demand Capacity Reservation, or remove capacity_reservation`, ct.ValueString()))
	}
	return diags
}

// capacityTarget is the block as internal/eks takes it, with what EC2 said
// of the reservation (r; zero for a resource group).
func capacityTarget(c *nodeGroupCapacityModel, r eks.CapacityReservation) *eks.CapacityTarget {
	t := &eks.CapacityTarget{ReservationID: c.ID.ValueString(), ResourceGroupARN: c.ResourceGroupARN.ValueString()}
	if r.IsCapacityBlock() {
		t.Block, t.InstanceType = true, r.InstanceType
	}
	return t
}

// setReservation records EC2's facts of the reservation in the block.
func (c *nodeGroupCapacityModel) setReservation(r eks.CapacityReservation) {
	c.ReservationType = types.StringValue(r.ReservationType)
	c.AvailabilityZone = types.StringValue(r.AvailabilityZone)
	c.InstanceType = types.StringValue(r.InstanceType)
	c.Start, c.End = timeValue(r.Start), timeValue(r.End)
	c.State = types.StringValue(r.State)
}

// timeValue is t in RFC 3339, "" when zero (no end date).
func timeValue(t time.Time) types.String {
	if t.IsZero() {
		return types.StringValue("")
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

// setLaunchTemplateFromLive records the group's launch template (setFromLive).
// The provider's own template is shown in capacity_reservation only, never in
// launch_template, which the user did not write; the user's template keeps
// the version the user named, the merged version being in
// capacity_reservation. A block's group, whose type EKS takes from the
// template, keeps the block's type in instance_types.
func (m *nodeGroupModel) setLaunchTemplateFromLive(live eks.NodeGroup) {
	lt := live.LaunchTemplate
	c := m.capacity()
	if lt == nil {
		m.LaunchTemplate = nil
		return
	}
	if c != nil {
		c.LaunchTemplateID, c.LaunchTemplateVersion = types.StringValue(lt.ID), types.StringValue(lt.Version)
		if len(live.InstanceTypes) == 0 && !c.InstanceType.IsNull() && !c.InstanceType.IsUnknown() {
			m.InstanceTypes = stringListValue([]string{c.InstanceType.ValueString()})
		}
		if lt.Name == eks.OwnedLaunchTemplateName(live.ClusterName, live.Name) {
			m.LaunchTemplate = nil
			return
		}
		if len(m.LaunchTemplate) == 1 {
			u := &m.LaunchTemplate[0]
			u.ID, u.Name = types.StringValue(lt.ID), types.StringValue(lt.Name)
			return
		}
	}
	m.LaunchTemplate = []nodeGroupLaunchTemplateModel{{
		ID: types.StringValue(lt.ID), Name: types.StringValue(lt.Name), Version: types.StringValue(lt.Version),
	}}
}

// prepareCapacity, before a create or update writes anything, reads the
// reservation again (values unknown at plan are known now, and it may have
// changed since), refuses it as the plan would, and makes the launch
// template version that targets it. It returns spec as EKS must get it,
// and false after adding an error. prior is the state before an update
// (nil on create): when the target is the same, the version the group runs
// is kept and nothing is written.
func (r *NodeGroupResource) prepareCapacity(ctx context.Context, client *eks.Client, prior, plan *nodeGroupModel, spec eks.NodeGroupSpec,
	summary string, diags *diag.Diagnostics) (eks.NodeGroupSpec, bool) {
	c := plan.capacity()
	if c == nil {
		return spec, true
	}
	if prior != nil && !capacityRetarget(prior, plan) {
		// The same target: the group keeps the version it runs, and the
		// plan checked what changed (a create-time refusal here would block
		// any update of a group whose block has since ended).
		pc := prior.capacity()
		spec.CapacityReservation = &eks.CapacityTarget{ReservationID: pc.ID.ValueString(), ResourceGroupARN: pc.ResourceGroupARN.ValueString(),
			Block: pc.ReservationType.ValueString() == eks.ReservationTypeCapacityBlock, InstanceType: pc.InstanceType.ValueString()}
		spec = spec.WithCapacityLaunchTemplate(eks.LaunchTemplate{ID: pc.LaunchTemplateID.ValueString(), Version: pc.LaunchTemplateVersion.ValueString()})
		c.LaunchTemplateID, c.LaunchTemplateVersion = pc.LaunchTemplateID, pc.LaunchTemplateVersion
		return spec, true
	}
	var res eks.CapacityReservation
	if id := c.ID.ValueString(); id != "" {
		var found bool
		var err error
		res, found, err = client.CapacityReservation(ctx, id)
		if err != nil {
			diags.AddError(summary, "reading capacity reservation "+id+" (EC2 DescribeCapacityReservations): "+err.Error())
			return spec, false
		}
		in := capacityCheckInput{res: res, found: found, capacityType: plan.CapacityType.ValueString(), instanceTypes: spec.InstanceTypes,
			desired: int64(spec.Scaling.Desired), now: time.Now()}
		if prior != nil && prior.capacity() != nil && prior.capacity().ID.Equal(c.ID) {
			in.held = desiredOf(prior)
		}
		if zones, err := client.SubnetZones(ctx, spec.SubnetIDs); err == nil {
			in.subnetZones = zones
		}
		for _, p := range checkCapacityReservation(in) {
			if p.err {
				diags.AddAttributeError(p.at, p.summary, p.detail)
			}
		}
		if diags.HasError() {
			return spec, false
		}
		c.setReservation(res)
	}
	spec.CapacityReservation = capacityTarget(c, res)
	start := time.Now()
	out, err := client.PrepareCapacityLaunchTemplate(ctx, spec)
	if err != nil {
		diags.AddError(summary, err.Error())
		return spec, false
	}
	c.LaunchTemplateID, c.LaunchTemplateVersion = types.StringValue(out.LaunchTemplate.ID), types.StringValue(out.LaunchTemplate.Version)
	tflog.Debug(ctx, "prepared the capacity reservation's launch template", map[string]any{
		"launch_template": out.LaunchTemplate.ID, "version": out.LaunchTemplate.Version, "duration": time.Since(start).String(),
	})
	return out, true
}

// capacityRetarget says whether an update must make a new launch template
// version: the reservation changed, or the user's template version did.
func capacityRetarget(prior, plan *nodeGroupModel) bool {
	pc, c := prior.capacity(), plan.capacity()
	if pc == nil || c == nil || pc.LaunchTemplateID.ValueString() == "" {
		return true
	}
	return !pc.ID.Equal(c.ID) || !pc.ResourceGroupARN.Equal(c.ResourceGroupARN) ||
		!slices.Equal(launchTemplateVersions(prior.LaunchTemplate), launchTemplateVersions(plan.LaunchTemplate))
}

// priorCapacitySpec is the prior state's spec as EKS has it: the launch
// template version the group runs, so that an update sends a launch
// template only when it changes.
func priorCapacitySpec(prior *nodeGroupModel, spec eks.NodeGroupSpec) eks.NodeGroupSpec {
	if pc := prior.capacity(); pc != nil && pc.LaunchTemplateID.ValueString() != "" {
		spec.LaunchTemplate = &eks.LaunchTemplate{ID: pc.LaunchTemplateID.ValueString(), Version: pc.LaunchTemplateVersion.ValueString()}
	}
	return spec
}

// dropCapacityTemplate deletes the provider's template after EKS created no
// group with it, so a failed create leaves nothing; if the delete fails, the
// next apply finds the template by its name and tag and adopts it.
func dropCapacityTemplate(ctx context.Context, client *eks.Client, plan *nodeGroupModel, diags *diag.Diagnostics) {
	if plan.capacity() == nil || len(plan.LaunchTemplate) > 0 {
		return
	}
	if err := client.DeleteOwnedLaunchTemplate(ctx, plan.ClusterName.ValueString(), plan.NodeGroupName.ValueString()); err != nil {
		diags.AddWarning("deleting the launch template of EKS node group "+plan.describe(),
			err.Error()+"\n\nThe next apply finds it by its name and tag and uses it; destroy has nothing to delete it from, so delete it by hand if you drop the group.")
	}
}

// deleteCapacityTemplate deletes the provider's template once the group is gone.
func deleteCapacityTemplate(ctx context.Context, client *eks.Client, state *nodeGroupModel, summary string, diags *diag.Diagnostics) {
	if state.capacity() == nil {
		return
	}
	if err := client.DeleteOwnedLaunchTemplate(ctx, state.ClusterName.ValueString(), state.NodeGroupName.ValueString()); err != nil {
		diags.AddError(summary, err.Error())
	}
}

// readCapacity refreshes the block from EC2 (Read): on import, the
// provider's own template is recognized (its name and tag) and the block
// built from the version the group runs; the reservation's state and end
// are read again, and a block that has ended is said to have taken the
// group's nodes with it.
func readCapacity(ctx context.Context, client *eks.Client, state *nodeGroupModel, live eks.NodeGroup, summary string, diags *diag.Diagnostics) {
	if state.capacity() == nil && live.LaunchTemplate != nil && live.LaunchTemplate.Name == eks.OwnedLaunchTemplateName(live.ClusterName, live.Name) {
		lt, err := client.ReadLaunchTemplateTarget(ctx, live.ClusterName, live.Name, *live.LaunchTemplate)
		if err != nil {
			diags.AddWarning(summary, "reading the group's launch template: "+err.Error())
			return
		}
		if !lt.Owned {
			return
		}
		c := nodeGroupCapacityModel{
			ID: stringOrNull(lt.Target.ReservationID), ResourceGroupARN: stringOrNull(lt.Target.ResourceGroupARN), ExpiryWarning: types.StringNull(),
			InstanceType: stringOrNull(lt.Target.InstanceType), LaunchTemplateID: types.StringValue(lt.ID), LaunchTemplateVersion: types.StringValue(lt.Version),
		}
		state.CapacityReservation = []nodeGroupCapacityModel{c}
		state.LaunchTemplate = nil
		if len(live.InstanceTypes) == 0 && lt.Target.InstanceType != "" {
			state.InstanceTypes = stringListValue([]string{lt.Target.InstanceType})
		}
		if state.DiskSize.IsNull() {
			state.DiskSize = types.Int64Value(int64(lt.Target.DiskSizeGiB))
		}
	}
	c := state.capacity()
	if c == nil || c.ID.ValueString() == "" {
		return
	}
	res, found, err := client.CapacityReservation(ctx, c.ID.ValueString())
	if err != nil {
		diags.AddWarning(summary, "reading capacity reservation "+c.ID.ValueString()+" (EC2 DescribeCapacityReservations): "+err.Error())
		return
	}
	if !found {
		c.State = types.StringValue("not found")
		diags.AddAttributeWarning(path.Root("capacity_reservation").AtListIndex(0).AtName("id"), "Capacity reservation not found",
			fmt.Sprintf("EC2 no longer knows capacity reservation %s: the group cannot launch into it. Point capacity_reservation at another one, or destroy the group.", c.ID.ValueString()))
		return
	}
	c.setReservation(res)
	if res.IsCapacityBlock() && blockEnded(res, time.Now()) {
		diags.AddAttributeWarning(path.Root("capacity_reservation").AtListIndex(0).AtName("end"), "Capacity Block ended",
			fmt.Sprintf("Capacity Block %s (%s in %s) ended at %s (EC2 state %s): EC2 reclaimed its instances, so the group has no nodes (ready_nodes 0). "+
				"Buy a new block (aws_ec2_capacity_block_reservation; gpu_inventory lists the offerings) and put its ID in capacity_reservation.id: "+
				"the group is updated in place. Or destroy the group.",
				res.ID, res.InstanceType, res.AvailabilityZone, res.End.UTC().Format(time.RFC3339), res.State))
	}
}

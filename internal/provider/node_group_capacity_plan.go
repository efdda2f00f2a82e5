package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds gpu_node_group's plan-time checks of capacity_reservation
// against EC2's answer (DescribeCapacityReservations), as a pure function
// of that answer, and the expiry warning.

// blockScaleDownLead is how long before a Capacity Block's end EKS scales
// its managed node group to zero ("Amazon EKS Node Group Capacity
// Scaledown Before Reservation End", 40 minutes; EC2 starts terminating the
// instances 30 minutes before the end):
// https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html
// A block that ends sooner cannot bring the group up.
const blockScaleDownLead = 40 * time.Minute

// blockExtensionHours is the extension asked of
// DescribeCapacityBlockExtensionOfferings for the expiry warning: one day,
// the shortest extension EC2 sells.
const blockExtensionHours = 24

// capacityCheckInput is what the checks look at.
type capacityCheckInput struct {
	res           eks.CapacityReservation
	found         bool
	capacityType  string
	instanceTypes []string
	subnetZones   map[string]string // nil: not known
	desired       int64             // -1: not known
	held          int64             // instances the group already runs in this reservation (update)
	now           time.Time
}

// capacityProblem is one thing the checks found: an error refuses a create
// or update; on a plan that changes nothing capacity-related it is shown as
// a warning, so a pre-destroy plan is never blocked by it.
type capacityProblem struct {
	at              path.Path
	err             bool
	summary, detail string
}

var capacityAt = path.Root("capacity_reservation").AtListIndex(0)

// checkCapacityReservation checks the reservation EC2 described against the
// group: it exists; it is active or scheduled; a block has not ended and
// does not end before the group could come up; its capacity type matches
// capacity_type; its instance type is the group's; its zone is a subnet's;
// desired_size fits what it has available.
func checkCapacityReservation(in capacityCheckInput) []capacityProblem {
	var out []capacityProblem
	add := func(at path.Path, summary, detail string) {
		out = append(out, capacityProblem{at: at, err: true, summary: summary, detail: detail})
	}
	r := in.res
	if !in.found {
		add(capacityAt.AtName("id"), "Capacity reservation not found",
			"EC2 knows no capacity reservation with this ID in the provider's region (InvalidCapacityReservationId.NotFound): check the ID and the region; "+
				`gpu_inventory with source = "ec2" lists the account's reservations and blocks`)
		return out
	}
	what := describeReservation(r)
	switch {
	case r.IsCapacityBlock() && blockEnded(r, in.now):
		add(capacityAt.AtName("id"), "Capacity Block has ended",
			fmt.Sprintf("%s ended (state %s, %s): EC2 has reclaimed its instances. Buy a new block (aws_ec2_capacity_block_reservation; gpu_inventory lists the offerings) and use its ID",
				what, r.State, reservationDates(r)))
		return out
	case r.State != "active" && r.State != "scheduled":
		add(capacityAt.AtName("id"), "Capacity reservation not usable",
			fmt.Sprintf("%s is %s (%s): a node group can launch only into an active or scheduled reservation. Use another one", what, r.State, reservationDates(r)))
		return out
	case r.IsCapacityBlock() && r.End.Sub(in.now) < blockScaleDownLead:
		add(capacityAt.AtName("id"), "Capacity Block ends too soon",
			fmt.Sprintf("%s ends at %s, in %s: EKS scales a block's node group to zero %s before the end and EC2 starts terminating its instances 30 minutes before, "+
				"so the group could not come up. Extend the block or use one that ends later",
				what, r.End.UTC().Format(time.RFC3339), r.End.Sub(in.now).Round(time.Minute), blockScaleDownLead))
		return out
	}
	switch {
	case r.IsCapacityBlock() && in.capacityType != nodeGroupCapacityTypeBlock:
		add(path.Root("capacity_type"), "Capacity Block needs capacity_type CAPACITY_BLOCK",
			fmt.Sprintf(`%s is a Capacity Block for ML: EKS launches into it only with capacity_type = "CAPACITY_BLOCK" (it rejects the create otherwise). Set it`, what))
	case !r.IsCapacityBlock() && in.capacityType != nodeGroupCapacityTypeOnDemand:
		add(path.Root("capacity_type"), "On-Demand Capacity Reservation needs capacity_type ON_DEMAND",
			fmt.Sprintf(`%s is an On-Demand Capacity Reservation, not a Capacity Block: set capacity_type = "ON_DEMAND" (the default)`, what))
	}
	if !slices.Contains(in.instanceTypes, r.InstanceType) {
		add(path.Root("instance_types"), "Instance type not in the capacity reservation",
			fmt.Sprintf("%s reserves %s, which is not among instance_types (%s): instances of other types cannot launch into it. Set instance_types = [%q]",
				what, r.InstanceType, strings.Join(in.instanceTypes, ", "), r.InstanceType))
	} else if r.IsCapacityBlock() && len(in.instanceTypes) > 1 {
		add(path.Root("instance_types"), "A Capacity Block group has one instance type",
			fmt.Sprintf("%s reserves %s only; EKS takes a block's group's type from its launch template, one type. Set instance_types = [%q]",
				what, r.InstanceType, r.InstanceType))
	}
	if in.subnetZones != nil {
		var inZone, elsewhere []string
		for _, s := range sortedKeys(in.subnetZones) {
			if in.subnetZones[s] == r.AvailabilityZone {
				inZone = append(inZone, s)
			} else {
				elsewhere = append(elsewhere, s+" ("+in.subnetZones[s]+")")
			}
		}
		switch {
		case len(inZone) == 0:
			add(path.Root("subnet_ids"), "No subnet in the capacity reservation's zone",
				fmt.Sprintf("%s is in %s, and no subnet of subnet_ids is (%s): instances launch into a reservation only in its Availability Zone. Add a subnet in %s",
					what, r.AvailabilityZone, strings.Join(elsewhere, ", "), r.AvailabilityZone))
		case len(elsewhere) > 0 && r.IsCapacityBlock():
			out = append(out, capacityProblem{at: path.Root("subnet_ids"), summary: "Subnets outside the Capacity Block's zone",
				detail: fmt.Sprintf("%s is in %s; subnets %s are not, and EKS asks a block's group for subnets in the block's zone only: keep %s",
					what, r.AvailabilityZone, strings.Join(elsewhere, ", "), strings.Join(inZone, ", "))})
		}
	}
	if in.desired >= 0 && in.desired > int64(r.AvailableInstances)+in.held {
		held := ""
		if in.held > 0 {
			held = fmt.Sprintf(" and the %d this group already runs in it", in.held)
		}
		add(path.Root("scaling").AtListIndex(0).AtName("desired_size"), "Capacity reservation too small",
			fmt.Sprintf("desired_size %d is more than %s has available: %d of %d instances%s. Lower desired_size to at most %d, or use a larger reservation",
				in.desired, what, r.AvailableInstances, r.TotalInstances, held, int64(r.AvailableInstances)+in.held))
	}
	return out
}

// blockEnded says whether a block is over: EC2 says so, or its end passed.
func blockEnded(r eks.CapacityReservation, now time.Time) bool {
	switch r.State {
	case "expired", "cancelled", "failed", "unavailable": //nolint:misspell // EC2's CapacityReservationState spells it so
		return true
	}
	return !r.End.IsZero() && !r.End.After(now)
}

func describeReservation(r eks.CapacityReservation) string {
	kind := "capacity reservation"
	if r.IsCapacityBlock() {
		kind = "Capacity Block"
	}
	return fmt.Sprintf("%s %s (%d x %s in %s)", kind, r.ID, r.TotalInstances, r.InstanceType, r.AvailabilityZone)
}

func reservationDates(r eks.CapacityReservation) string {
	s := "starts " + r.Start.UTC().Format(time.RFC3339)
	if r.End.IsZero() {
		return s + ", no end date"
	}
	return s + ", ends " + r.End.UTC().Format(time.RFC3339)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// expiryWarning is the warning for a block that ends within window, or "".
func expiryWarning(r eks.CapacityReservation, now time.Time, window time.Duration, offers []eks.CapacityBlockExtensionOffering, offersErr error) string {
	if !r.IsCapacityBlock() || r.End.IsZero() || blockEnded(r, now) || r.End.Sub(now) > window {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s ends at %s, in %s. EKS scales the group to zero %s before, and EC2 then reclaims the instances (it starts terminating them 30 minutes before the end): "+
		"the group keeps no nodes after it.", describeReservation(r), r.End.UTC().Format(time.RFC3339), r.End.Sub(now).Round(time.Minute), blockScaleDownLead)
	switch {
	case offersErr != nil:
		fmt.Fprintf(&b, " The offerings to extend it could not be read (EC2 DescribeCapacityBlockExtensionOfferings): %s", offersErr)
	case len(offers) == 0:
		fmt.Fprintf(&b, " EC2 offers no %d-hour extension of it now.", blockExtensionHours)
	default:
		b.WriteString(" To keep it, extend it (EC2 PurchaseCapacityBlockExtension) with one of:")
		for _, o := range offers {
			fmt.Fprintf(&b, "\n  - %s: %d hours, to %s, %s %s", o.ID, o.DurationHours, o.End.UTC().Format(time.RFC3339), o.UpfrontFee, o.CurrencyCode)
		}
	}
	return b.String()
}

// planCapacity plans capacity_reservation's computed attributes from EC2's
// answer and runs the checks (ModifyPlan). A plan that creates the group or
// changes what the checks look at gets their errors; any other plan (the
// one Terraform makes before a destroy among them) gets them as warnings.
// The expiry warning is in every plan.
func (r *NodeGroupResource) planCapacity(ctx context.Context, state, plan, config *nodeGroupModel, diags *diag.Diagnostics) {
	c := plan.capacity()
	if c == nil {
		return
	}
	var prior *nodeGroupCapacityModel
	if state != nil {
		prior = state.capacity()
	}
	sameTarget := prior != nil && prior.ID.Equal(c.ID) && prior.ResourceGroupARN.Equal(c.ResourceGroupARN)
	if sameTarget {
		c.ReservationType, c.AvailabilityZone, c.InstanceType = prior.ReservationType, prior.AvailabilityZone, prior.InstanceType
		c.Start, c.End, c.State = prior.Start, prior.End, prior.State
		c.LaunchTemplateID, c.LaunchTemplateVersion = prior.LaunchTemplateID, prior.LaunchTemplateVersion
	} else {
		c.ReservationType, c.AvailabilityZone, c.InstanceType = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		c.Start, c.End, c.State = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		c.LaunchTemplateVersion = types.StringUnknown()
		if prior == nil {
			c.LaunchTemplateID = types.StringUnknown()
		} else {
			c.LaunchTemplateID = prior.LaunchTemplateID
			if config.ReleaseVersion.IsNull() {
				plan.ReleaseVersion = types.StringUnknown() // a new template version may bring the latest AMI release
			}
		}
	}
	if state != nil && !slices.Equal(launchTemplateVersions(plan.LaunchTemplate), launchTemplateVersions(state.LaunchTemplate)) {
		c.LaunchTemplateVersion = types.StringUnknown()
	}
	if c.ID.IsUnknown() || c.ID.IsNull() || r.clients == nil {
		if c.ResourceGroupARN.IsNull() || c.ResourceGroupARN.IsUnknown() || sameTarget {
			return
		}
		for _, v := range []*types.String{&c.ReservationType, &c.AvailabilityZone, &c.InstanceType, &c.Start, &c.End, &c.State} {
			*v = types.StringNull() // a group of reservations has no one type, zone or dates
		}
		return
	}
	summary := "checking gpu_node_group's capacity reservation against EC2"
	client := r.clients.awsFor(ctx, summary, diags)
	if client == nil {
		return
	}
	changed := state == nil || !sameTarget || !plan.InstanceTypes.Equal(state.InstanceTypes) || !plan.SubnetIDs.Equal(state.SubnetIDs) ||
		!plan.CapacityType.Equal(state.CapacityType) || desiredOf(plan) != desiredOf(state)
	id := c.ID.ValueString()
	res, found, err := client.CapacityReservation(ctx, id)
	if err != nil {
		msg := "reading capacity reservation " + id + " (EC2 DescribeCapacityReservations): " + err.Error()
		if changed {
			diags.AddError(summary, msg)
		} else {
			diags.AddWarning(summary, msg)
		}
		return
	}
	in := capacityCheckInput{res: res, found: found, capacityType: plan.CapacityType.ValueString(), instanceTypes: stringsOf(ctx, plan.InstanceTypes),
		desired: desiredOf(plan), now: time.Now()}
	if state != nil && sameTarget {
		in.held = desiredOf(state)
	}
	if subnets := stringsOf(ctx, plan.SubnetIDs); !plan.SubnetIDs.IsUnknown() && len(subnets) == len(plan.SubnetIDs.Elements()) {
		if zones, err := client.SubnetZones(ctx, subnets); err == nil {
			in.subnetZones = zones
		}
	}
	for _, p := range checkCapacityReservation(in) {
		if p.err && changed {
			diags.AddAttributeError(p.at, p.summary, p.detail)
		} else {
			diags.AddAttributeWarning(p.at, p.summary, p.detail)
		}
	}
	if !found {
		return
	}
	c.setReservation(res)
	window := defaultCapacityExpiryWarning
	if d, err := time.ParseDuration(c.ExpiryWarning.ValueString()); err == nil && !c.ExpiryWarning.IsNull() {
		window = d
	}
	now := time.Now()
	if res.IsCapacityBlock() && !res.End.IsZero() && !blockEnded(res, now) && res.End.Sub(now) <= window {
		offers, offersErr := client.CapacityBlockExtensionOfferings(ctx, id, blockExtensionHours)
		if w := expiryWarning(res, now, window, offers, offersErr); w != "" {
			diags.AddAttributeWarning(capacityAt.AtName("end"), "Capacity Block ends soon", w)
		}
	}
}

// desiredOf is the planned desired_size, -1 when unknown.
func desiredOf(m *nodeGroupModel) int64 {
	if m == nil || len(m.Scaling) != 1 || m.Scaling[0].DesiredSize.IsUnknown() || m.Scaling[0].DesiredSize.IsNull() {
		return -1
	}
	return m.Scaling[0].DesiredSize.ValueInt64()
}

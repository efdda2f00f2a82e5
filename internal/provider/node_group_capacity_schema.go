package provider

import (
	"context"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// This file holds gpu_node_group's capacity_reservation block: its schema
// and model. The rest of the feature is in node_group_capacity*.go.

// nodeGroupCapacityModel is one capacity_reservation block.
type nodeGroupCapacityModel struct {
	ID               types.String `tfsdk:"id"`
	ResourceGroupARN types.String `tfsdk:"resource_group_arn"`
	ExpiryWarning    types.String `tfsdk:"expiry_warning"`

	ReservationType       types.String `tfsdk:"reservation_type"`
	AvailabilityZone      types.String `tfsdk:"availability_zone"`
	InstanceType          types.String `tfsdk:"instance_type"`
	Start                 types.String `tfsdk:"start"`
	End                   types.String `tfsdk:"end"`
	State                 types.String `tfsdk:"state"`
	LaunchTemplateID      types.String `tfsdk:"launch_template_id"`
	LaunchTemplateVersion types.String `tfsdk:"launch_template_version"`
}

var (
	capacityReservationIDPattern  = regexp.MustCompile(`^cr-[0-9a-f]+$`)
	capacityResourceGroupPattern  = regexp.MustCompile(`^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:[0-9]{12}:group/.+$`)
	defaultCapacityExpiryWarning  = 24 * time.Hour
	nodeGroupCapacityTypeBlock    = "CAPACITY_BLOCK"
	nodeGroupCapacityTypeOnDemand = "ON_DEMAND"
)

func nodeGroupCapacityBlock() schema.ListNestedBlock {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	return schema.ListNestedBlock{
		MarkdownDescription: "Launch the nodes into an EC2 capacity reservation: an On-Demand Capacity Reservation (`capacity_type = \"ON_DEMAND\"`) " +
			"or a Capacity Block for ML (`capacity_type = \"CAPACITY_BLOCK\"`), by `id`, or a capacity reservation resource group by " +
			"`resource_group_arn`. Without `launch_template` the provider creates, owns and deletes the launch template EKS needs for it; " +
			"with one, it adds the targeting to a new version of yours. Checked against EC2 at plan time; see \"Capacity reservations and " +
			"Capacity Blocks for ML\" above. A new `id` updates the group in place; adding or removing the block replaces the group.",
		Validators: []validator.List{listvalidator.SizeAtMost(1)},
		PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplaceIf(capacityPresenceChanged,
			"Adding or removing capacity_reservation replaces the group: EKS cannot give a group a launch template it was created without, nor take it away.",
			"Adding or removing `capacity_reservation` replaces the group.")},
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Optional: true, MarkdownDescription: "Capacity reservation or Capacity Block ID, e.g. `cr-0123456789abcdef0` (`gpu_inventory` lists them). Exactly one of `id` and `resource_group_arn`.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(capacityReservationIDPattern, "must be a capacity reservation ID, e.g. cr-0123456789abcdef0"),
					stringvalidator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("resource_group_arn")),
				},
			},
			"resource_group_arn": schema.StringAttribute{
				Optional: true, MarkdownDescription: "ARN of a capacity reservation resource group (On-Demand Capacity Reservations only). " +
					"The plan-time checks need a reservation ID and are skipped for a group.",
				Validators: []validator.String{stringvalidator.RegexMatches(capacityResourceGroupPattern,
					"must be a resource group ARN, e.g. arn:aws:resource-groups:us-west-2:111122223333:group/gpu-reservations")},
			},
			"expiry_warning": schema.StringAttribute{
				Optional: true, MarkdownDescription: "Warn in every plan when the block ends within this long, e.g. `72h`. Unset: `24h`.",
				Validators: []validator.String{positiveDurationValidator{}},
			},
			"reservation_type":  computed("EC2's reservation type: `default` (On-Demand Capacity Reservation) or `capacity-block`."),
			"availability_zone": computed("Availability Zone of the reservation."),
			"instance_type":     computed("Instance type of the reservation."),
			"start":             computed("When the reservation starts (RFC 3339)."),
			"end":               computed("When the reservation ends (RFC 3339); empty for a reservation without an end date. EC2 reclaims a block's instances at its end."),
			"state":             computed("EC2's state of the reservation when last read, e.g. `scheduled`, `active`, `expired`."),
			"launch_template_id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The launch template the group runs: the provider's own, or yours.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"launch_template_version": computed("The launch template version that holds the targeting."),
		}},
	}
}

// capacityPresenceChanged: a capacity_reservation block added or removed.
func capacityPresenceChanged(_ context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
	if req.StateValue.IsNull() || req.PlanValue.IsUnknown() {
		return
	}
	resp.RequiresReplace = (len(req.StateValue.Elements()) == 0) != (len(req.PlanValue.Elements()) == 0)
}

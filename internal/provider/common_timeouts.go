package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = positiveDurationValidator{}

// resourceTimeoutsBlock is the `timeouts` block of a resource: the one
// terraform-plugin-framework-timeouts builds for opts, described by
// description, whose every duration must be positive. The package's own
// validator accepts any duration Go parses, so `create = "-5m"` or "0s"
// would pass plan and then end the wait before it starts, after the
// objects were created.
func resourceTimeoutsBlock(ctx context.Context, opts timeouts.Opts, description string) schema.SingleNestedBlock {
	block, ok := timeouts.Block(ctx, opts).(schema.SingleNestedBlock)
	if !ok {
		panic("timeouts.Block is no longer a SingleNestedBlock")
	}
	block.MarkdownDescription = description
	for name, a := range block.Attributes {
		s, ok := a.(schema.StringAttribute)
		if !ok {
			panic("timeouts." + name + " is no longer a StringAttribute")
		}
		s.Validators = []validator.String{positiveDurationValidator{}}
		block.Attributes[name] = s
	}
	return block
}

// positiveDurationValidator accepts a duration as Go writes it ("90s",
// "30m", "1h30m") that is more than zero.
type positiveDurationValidator struct{}

func (positiveDurationValidator) Description(context.Context) string {
	return "value must be a positive duration as Go writes it, e.g. \"90s\", \"30m\" or \"2h\""
}

func (v positiveDurationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (positiveDurationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if d, ok := durationOf(req, resp); ok && d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			req.Path.String()+" "+quote(s)+" is not positive: a wait bounded by it would end before it starts, after the objects were created. "+
				"Write a positive duration, e.g. \"30m\", or remove it for the default.")
	}
}

// durationOf parses a known duration attribute; when it is not a duration
// it adds the error that says how to write one and ok is false.
func durationOf(req validator.StringRequest, resp *validator.StringResponse) (d time.Duration, ok bool) {
	s := req.ConfigValue.ValueString()
	d, err := time.ParseDuration(s)
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			req.Path.String()+" "+quote(s)+" is not a duration. Write a number with a unit as Go does: \"30s\", \"30m\", \"2h\" or \"1h30m\" (units ns, us, ms, s, m, h).")
		return 0, false
	}
	return d, true
}

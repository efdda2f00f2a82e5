package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// devicePluginHealthAgentModel is the `health_agent` block: gpu-bootstrap's
// GPU health agent beside the plugin (kube.HealthAgentSpec).
type devicePluginHealthAgentModel struct {
	Image           types.String `tfsdk:"image"`
	Taint           types.Bool   `tfsdk:"taint"`
	DampingInterval types.String `tfsdk:"damping_interval"`
	SampleInterval  types.String `tfsdk:"sample_interval"`
	FatalFaults     types.Set    `tfsdk:"fatal_faults"`
	ExpectedGPUs    types.Int64  `tfsdk:"expected_gpus"`
	Port            types.Int64  `tfsdk:"port"`
	DaemonSet       types.String `tfsdk:"daemonset"`
}

var healthAgentPath = path.Root("health_agent")

func devicePluginHealthAgentBlock() schema.SingleNestedBlock {
	defaults := gpuhealth.DefaultSettings()
	var classes, fatal []string
	for _, c := range gpuhealth.AllClasses() {
		classes = append(classes, string(c))
	}
	for _, c := range gpuhealth.DefaultFatal() {
		fatal = append(fatal, string(c))
	}
	fatalDefault := make([]attr.Value, len(fatal))
	for i, c := range fatal {
		fatalDefault[i] = types.StringValue(c)
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Deploy gpu-bootstrap as the nodes' GPU health agent (`gpu-bootstrap health-agent`), a DaemonSet `<name>-health-agent` " +
			"on the plugin's nodes, with the plugin's RuntimeClass and tolerations (plus its own taint's), its ServiceAccount, a ClusterRole " +
			"that lets it read and patch nodes (`nodes`, `nodes/status`) and write Events, and a Service `<name>-health-agent` in front of " +
			"its metrics port. From what NVML reports, the agent keeps each node's `AcceleratedHardwareReady` condition (EKS node " +
			"monitoring agent's type and reasons, so EKS node auto repair acts on it), the `gpu.gpuinfra.io/unhealthy-gpus` annotation and " +
			"optionally a `NoSchedule` taint up to date, writes an Event per transition, and serves the DCGM exporter's metric names on " +
			"`/metrics`. See the [GPU health guide](../guides/gpu-health.md) for the reasons and fault classes.\n\n" +
			"With `wait_for_allocatable` the apply also waits until every node the agent runs on reports the condition, whatever its " +
			"status; a failed wait names the nodes and the state of their agent pods. Removing the block deletes the agent's objects.",
		Attributes: map[string]schema.Attribute{
			"image": schema.StringAttribute{
				// Required in the block, checked in validate: the framework
				// holds a Required attribute of a SingleNestedBlock to be set
				// even when the block is removed.
				Optional: true,
				MarkdownDescription: "Image of gpu-bootstrap (its `gpu-bootstrap` binary on the `PATH`, built with NVML). Required: no image " +
					"is published; build one from this repository's `cmd/gpu-bootstrap`.",
				Validators: []validator.String{imageReferenceValidator{}},
			},
			"taint": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(defaults.Taint),
				MarkdownDescription: "Taint a node `" + gpuhealth.TaintKey + "=<reason>:NoSchedule` while a fatal fault stands (the agent " +
					"removes only the taint it set). Defaults to `false`: the condition alone says so.",
			},
			"damping_interval": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(shortDuration(defaults.Damping)),
				MarkdownDescription: "The published condition changes at most once per interval (the first change after a quiet " +
					"interval at once), so that a flapping GPU does not trigger repair; `0s` publishes every change at once. A duration as " +
					"Go writes it. Defaults to `" + shortDuration(defaults.Damping) + "`.",
				Validators: []validator.String{nonNegativeDurationValidator{}},
			},
			"sample_interval": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(shortDuration(defaults.SampleInterval)),
				MarkdownDescription: "How often the agent samples NVML's counters (ECC, row remapping, retired pages, NVLink, PCIe); XID " +
					"events arrive as they happen. A duration as Go writes it. Defaults to `" + shortDuration(defaults.SampleInterval) + "`.",
				Validators: []validator.String{positiveDurationValidator{}},
			},
			"fatal_faults": schema.SetAttribute{
				Optional:    true,
				Computed:    true,
				ElementType: types.StringType,
				Default:     setdefault.StaticValue(types.SetValueMust(types.StringType, fatalDefault)),
				MarkdownDescription: "The fault classes that make the condition `False` (and taint, with `taint`); the others only " +
					"degrade (a Warning Event, the condition stays `True`). Valid values are: " + backtickList(classes) +
					". Defaults to " + backtickList(fatal) + ".",
				Validators: []validator.Set{setvalidator.ValueStringsAre(faultClassValidator{})},
			},
			"expected_gpus": schema.Int64Attribute{
				CustomType: wholeNumberType{},
				Optional:   true,
				Computed:   true,
				Default:    int64default.StaticInt64(int64(defaults.ExpectedGPUs)),
				MarkdownDescription: "GPUs each node should have: fewer answering NVML is the `device_count` fault. `0` takes the node's " +
					"`nvidia.com/gpu.count` label (GPU Feature Discovery's). Defaults to `0`.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"port": schema.Int64Attribute{
				CustomType:          wholeNumberType{},
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(int64(kube.HealthAgentSpec{Settings: defaults}.Port())),
				MarkdownDescription: "Port of `/metrics` and `/healthz` (the readiness probe), on the pods and the Service. Defaults to `9400`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"daemonset": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the agent's DaemonSet (`<name>-health-agent`), in `namespace`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}

// nonNegativeDurationValidator accepts a duration as Go writes it that is
// not negative.
type nonNegativeDurationValidator struct{}

func (nonNegativeDurationValidator) Description(context.Context) string {
	return "value must be a duration as Go writes it, e.g. \"30s\" or \"1m\", and not negative"
}

func (v nonNegativeDurationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (nonNegativeDurationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if d, ok := durationOf(req, resp); ok && d < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			req.Path.String()+" "+quote(s)+" is negative. Write a duration such as \"1m\", or \"0s\" to publish every change at once.")
	}
}

// faultClassValidator accepts a gpuhealth fault class by name.
type faultClassValidator struct{}

func (faultClassValidator) Description(context.Context) string {
	return "value must be a fault class of the GPU health agent"
}

func (v faultClassValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (faultClassValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := gpuhealth.ParseFaultClass(req.ConfigValue.ValueString()); err != nil {
		var names []string
		for _, c := range gpuhealth.AllClasses() {
			names = append(names, string(c))
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Unknown fault class",
			fmt.Sprintf("health_agent.fatal_faults: %s is not a fault class. Valid values are: %s.",
				quote(req.ConfigValue.ValueString()), strings.Join(names, ", ")))
	}
}

// validate checks the settings as the agent itself checks them
// (gpuhealth.Settings.Validate), on the configuration: unset attributes
// count at their defaults, unknown ones leave it to the apply.
func (h *devicePluginHealthAgentModel) validate(ctx context.Context) diag.Diagnostics {
	var diags diag.Diagnostics
	if h == nil {
		return diags
	}
	if h.Image.IsNull() {
		diags.AddAttributeError(healthAgentPath.AtName("image"), "Missing health agent image",
			"health_agent.image is required: no image of gpu-bootstrap is published. Build one from cmd/gpu-bootstrap, push it to a "+
				"registry the nodes pull from, and set health_agent.image to it.")
	}
	c := *h
	defaults := devicePluginHealthAgentFromKube(kube.HealthAgentSpec{Settings: gpuhealth.DefaultSettings()}, "", nil)
	for _, v := range []attr.Value{c.Taint, c.DampingInterval, c.SampleInterval, c.FatalFaults, c.ExpectedGPUs, c.Port} {
		if v.IsUnknown() {
			return diags
		}
	}
	if c.Taint.IsNull() {
		c.Taint = defaults.Taint
	}
	if c.DampingInterval.IsNull() {
		c.DampingInterval = defaults.DampingInterval
	}
	if c.SampleInterval.IsNull() {
		c.SampleInterval = defaults.SampleInterval
	}
	if c.FatalFaults.IsNull() {
		c.FatalFaults = defaults.FatalFaults
	}
	if c.ExpectedGPUs.IsNull() {
		c.ExpectedGPUs = defaults.ExpectedGPUs
	}
	if c.Port.IsNull() {
		c.Port = defaults.Port
	}
	for _, e := range c.FatalFaults.Elements() {
		if !known(e) {
			return diags
		}
	}
	settings, d := c.settings(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return diags
	}
	if err := settings.Validate(); err != nil {
		diags.AddAttributeError(healthAgentPath, "Invalid health agent settings", "health_agent: "+err.Error())
	}
	return diags
}

// settings are the agent's settings the block gives; the fatal classes in
// gpuhealth.AllClasses' order, so that a reordered set rolls no pods.
func (h *devicePluginHealthAgentModel) settings(ctx context.Context) (gpuhealth.Settings, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := gpuhealth.Settings{
		Listen:       fmt.Sprintf(":%d", h.Port.ValueInt64()),
		Taint:        h.Taint.ValueBool(),
		ExpectedGPUs: int(h.ExpectedGPUs.ValueInt64()),
	}
	for _, d := range []struct {
		name  string
		value types.String
		into  *time.Duration
	}{{"damping_interval", h.DampingInterval, &s.Damping}, {"sample_interval", h.SampleInterval, &s.SampleInterval}} {
		parsed, err := time.ParseDuration(d.value.ValueString())
		if err != nil {
			diags.AddAttributeError(healthAgentPath.AtName(d.name), "Invalid duration",
				fmt.Sprintf("health_agent.%s %s is not a duration: write one as Go does, e.g. \"5s\", \"1m\" or \"1m30s\".", d.name, quote(d.value.ValueString())))
		}
		*d.into = parsed
	}
	var names []string
	diags.Append(h.FatalFaults.ElementsAs(ctx, &names, false)...)
	for _, c := range gpuhealth.AllClasses() {
		if slices.Contains(names, string(c)) {
			s.Fatal = append(s.Fatal, c)
		}
	}
	return s, diags
}

// toKube is the block as the agent to deploy; nil without the block.
func (h *devicePluginHealthAgentModel) toKube(ctx context.Context) (*kube.HealthAgentSpec, diag.Diagnostics) {
	if h == nil {
		return nil, nil
	}
	settings, diags := h.settings(ctx)
	return &kube.HealthAgentSpec{Image: h.Image.ValueString(), Settings: settings}, diags
}

// devicePluginHealthAgentFromKube is the block the cluster's agent gives,
// keeping prior's spelling of a duration that is the same length of time
// ("60s" stays "60s", not "1m").
func devicePluginHealthAgentFromKube(agent kube.HealthAgentSpec, daemonSet string, prior *devicePluginHealthAgentModel) *devicePluginHealthAgentModel {
	var priorDamping, priorSample types.String
	if prior != nil {
		priorDamping, priorSample = prior.DampingInterval, prior.SampleInterval
	}
	fatal := make([]attr.Value, len(agent.Settings.Fatal))
	for i, c := range agent.Settings.Fatal {
		fatal[i] = types.StringValue(string(c))
	}
	return &devicePluginHealthAgentModel{
		Image:           types.StringValue(agent.Image),
		Taint:           types.BoolValue(agent.Settings.Taint),
		DampingInterval: keepDurationSpelling(agent.Settings.Damping, priorDamping),
		SampleInterval:  keepDurationSpelling(agent.Settings.SampleInterval, priorSample),
		FatalFaults:     types.SetValueMust(types.StringType, fatal),
		ExpectedGPUs:    types.Int64Value(int64(agent.Settings.ExpectedGPUs)),
		Port:            types.Int64Value(int64(agent.Port())),
		DaemonSet:       types.StringValue(daemonSet),
	}
}

// keepDurationSpelling is prior when it spells d, else d shortest.
func keepDurationSpelling(d time.Duration, prior types.String) types.String {
	if known(prior) {
		if p, err := time.ParseDuration(prior.ValueString()); err == nil && p == d {
			return prior
		}
	}
	return types.StringValue(shortDuration(d))
}

// shortDuration writes d as Go does, without zero minutes or seconds
// after a larger unit: 1m, 1h30m, 90s is 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

package provider

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var _ validator.String = devicePluginResourceNameValidator{}

// devicePluginConfigModel is the `config` block: the plugin's config file.
type devicePluginConfigModel struct {
	MIGStrategy        types.String              `tfsdk:"mig_strategy"`
	FailOnInitError    types.Bool                `tfsdk:"fail_on_init_error"`
	PassDeviceSpecs    types.Bool                `tfsdk:"pass_device_specs"`
	DeviceListStrategy types.List                `tfsdk:"device_list_strategy"`
	DeviceIDStrategy   types.String              `tfsdk:"device_id_strategy"`
	TimeSlicing        *devicePluginSharingModel `tfsdk:"time_slicing"`
	MPS                *devicePluginSharingModel `tfsdk:"mps"`
}

// devicePluginSharingModel is `time_slicing` or `mps`.
type devicePluginSharingModel struct {
	RenameByDefault            types.Bool                        `tfsdk:"rename_by_default"`
	FailRequestsGreaterThanOne types.Bool                        `tfsdk:"fail_requests_greater_than_one"`
	Resources                  []devicePluginSharedResourceModel `tfsdk:"resource"`
}

type devicePluginSharedResourceModel struct {
	Name     types.String `tfsdk:"name"`
	Replicas types.Int64  `tfsdk:"replicas"`
	Rename   types.String `tfsdk:"rename"`
}

func devicePluginConfigBlock() schema.SingleNestedBlock {
	defaults := kube.DefaultDevicePluginConfig()
	return schema.SingleNestedBlock{
		MarkdownDescription: "The plugin's config file (`version: v1`, NVIDIA's `api/config/v1`), kept in the ConfigMap `<name>-config` " +
			"and read through `CONFIG_FILE`. The plugin's defaults apply when the block is left out. A change rolls the plugin's pods.",
		Attributes: map[string]schema.Attribute{
			"mig_strategy": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(defaults.MIGStrategy),
				MarkdownDescription: "How MIG devices are advertised: `none` ignores MIG, `single` advertises MIG devices as `nvidia.com/gpu` " +
					"(every GPU of a node partitioned alike), `mixed` as `nvidia.com/mig-<profile>`. Valid values are: " +
					backtickList(kube.MIGStrategies) + ". Defaults to `none`.",
				Validators: []validator.String{stringvalidator.OneOf(kube.MIGStrategies...)},
			},
			"fail_on_init_error": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(defaults.FailOnInitError),
				MarkdownDescription: "Make the plugin exit when it cannot initialize NVML (no driver, no GPU) instead of idling. Defaults to `true`.",
			},
			"pass_device_specs": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(defaults.PassDeviceSpecs),
				MarkdownDescription: "Pass the GPUs' device nodes to the kubelet, as the CPU manager's `static` policy needs; the plugin then runs privileged. Defaults to `false`.",
			},
			"device_list_strategy": schema.ListAttribute{
				Optional:    true,
				Computed:    true,
				ElementType: types.StringType,
				Default:     listdefault.StaticValue(listDefaultStrings(defaults.DeviceListStrategy...)),
				MarkdownDescription: "How a container is told its GPUs, one or more of: " + backtickList(kube.DeviceListStrategies) +
					". The CDI strategies need CDI enabled in the container runtime. Defaults to `[\"envvar\"]`.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.OneOf(kube.DeviceListStrategies...)),
				},
			},
			"device_id_strategy": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(defaults.DeviceIDStrategy),
				MarkdownDescription: "How GPUs are named to containers. Valid values are: " + backtickList(kube.DeviceIDStrategies) + ". Defaults to `uuid`.",
				Validators:          []validator.String{stringvalidator.OneOf(kube.DeviceIDStrategies...)},
			},
		},
		Blocks: map[string]schema.Block{
			"time_slicing": devicePluginSharingBlock("Time-slicing: each GPU is advertised `replicas` times and the pods given the same GPU "+
				"take turns on it, with no memory or fault isolation.", "mps", timeSlicingReplicas),
			"mps": devicePluginSharingBlock("MPS (Multi-Process Service): each GPU is advertised `replicas` times and its memory and compute "+
				"split evenly among the clients; the MPS control daemon DaemonSet (`<name>-mps-control-daemon`) is deployed too, on nodes "+
				"GPU Feature Discovery labels `nvidia.com/mps.capable=true`.", "time_slicing", mpsReplicas),
		},
	}
}

func devicePluginSharingBlock(description, conflictsWith string, replicas replicasBound) schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: description + " Conflicts with `" + conflictsWith + "`.",
		Validators:          []validator.Object{objectvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName(conflictsWith))},
		Attributes: map[string]schema.Attribute{
			"rename_by_default": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Advertise shared GPUs as `<name>.shared` (`nvidia.com/gpu.shared`) instead of `<name>`, so that only " +
					"pods that ask for a shared GPU get one. Defaults to `false`.",
			},
			"fail_requests_greater_than_one": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Refuse a container that asks for more than one shared GPU (a second replica of the same GPU would " +
					"give it nothing more). Unset leaves the plugin's default: `false` for time-slicing, `true` for MPS.",
			},
		},
		Blocks: map[string]schema.Block{
			"resource": schema.ListNestedBlock{
				MarkdownDescription: "A resource to share; at least one.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(gpulabels.ResourceName),
						MarkdownDescription: "Resource to share: `nvidia.com/gpu`, or a MIG resource such as `nvidia.com/mig-1g.10gb`. Defaults to `nvidia.com/gpu`.",
						Validators:          []validator.String{devicePluginResourceNameValidator{}},
					},
					"replicas": schema.Int64Attribute{
						CustomType:          wholeNumberType{},
						Required:            true,
						MarkdownDescription: fmt.Sprintf("How many pods may share one device: at least 2 (1 would not share), at most %d (%s).", replicas.max, replicas.why),
						Validators:          []validator.Int64{int64validator.AtLeast(2), replicas},
					},
					"rename": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "A name to advertise the shared resource under. NVIDIA's plugin ignores it since v0.12 (including the " +
							"default image) and uses `name`, or `name` + `.shared` with `rename_by_default`; the plan warns when it is set.",
						Validators: []validator.String{devicePluginResourceNameValidator{}},
					},
				}},
			},
		},
	}
}

// devicePluginResourceNameValidator accepts the plugin's resource names:
// "nvidia.com/" and a DNS-1123 subdomain, 63 characters in all
// (NewResourceName in api/config/v1).
type devicePluginResourceNameValidator struct{}

func (devicePluginResourceNameValidator) Description(context.Context) string {
	return "value must be an NVIDIA resource name: nvidia.com/ and a DNS-1123 subdomain, at most 63 characters, e.g. nvidia.com/gpu"
}

func (v devicePluginResourceNameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (devicePluginResourceNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if problem := checkDevicePluginResourceName(req.ConfigValue.ValueString()); problem != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid NVIDIA resource name",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" "+problem+
				". Write the full name, e.g. \"nvidia.com/gpu\" or \"nvidia.com/mig-1g.10gb\".")
	}
}

func checkDevicePluginResourceName(name string) string {
	const prefix = "nvidia.com/"
	rest, ok := strings.CutPrefix(name, prefix)
	switch {
	case !ok:
		return "does not start with " + quote(prefix)
	case len(name) > 63:
		return fmt.Sprintf("is %d characters long, more than 63", len(name))
	}
	if errs := validation.IsDNS1123Subdomain(rest); len(errs) > 0 {
		return "has a name part that is not a DNS-1123 subdomain: " + strings.Join(errs, "; ")
	}
	return ""
}

// validateSharing checks what no attribute validator can: a sharing block
// without resources, resource names listed twice, and the `rename` the
// plugin would ignore (a warning).
func (m *devicePluginConfigModel) validateSharing(base path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	if m == nil {
		return diags
	}
	for block, sharing := range map[string]*devicePluginSharingModel{"time_slicing": m.TimeSlicing, "mps": m.MPS} {
		if sharing == nil {
			continue
		}
		if len(sharing.Resources) == 0 {
			diags.AddAttributeError(base.AtName(block), "Nothing to share",
				base.AtName(block).String()+" has no resource block: add one, e.g. resource { name = \"nvidia.com/gpu\" replicas = 4 }.")
		}
		seen := map[string]bool{}
		for i, r := range sharing.Resources {
			p := base.AtName(block).AtName("resource").AtListIndex(i)
			if !r.Name.IsUnknown() {
				name := r.Name.ValueString()
				if r.Name.IsNull() {
					name = gpulabels.ResourceName
				}
				if seen[name] {
					diags.AddAttributeError(p.AtName("name"), "Resource shared twice",
						fmt.Sprintf("%s lists %q more than once: give each resource one `resource` block.", base.AtName(block), name))
				}
				seen[name] = true
			}
			if !r.Rename.IsNull() && !r.Rename.IsUnknown() {
				diags.AddAttributeWarning(p.AtName("rename"), "rename is ignored by NVIDIA's device plugin",
					"NVIDIA's device plugin ignores a per-resource rename since v0.12, including the default image: it advertises the "+
						"resource under its name, or with \".shared\" appended when rename_by_default = true. Remove rename, or set rename_by_default.")
			}
		}
	}
	return diags
}

// toKube turns the block into the config file's content; nil means the
// plugin's defaults.
func (m *devicePluginConfigModel) toKube(ctx context.Context) (kube.DevicePluginConfig, diag.Diagnostics) {
	c := kube.DefaultDevicePluginConfig()
	var diags diag.Diagnostics
	if m == nil {
		return c, diags
	}
	c.MIGStrategy = m.MIGStrategy.ValueString()
	c.FailOnInitError = m.FailOnInitError.ValueBool()
	c.PassDeviceSpecs = m.PassDeviceSpecs.ValueBool()
	c.DeviceIDStrategy = m.DeviceIDStrategy.ValueString()
	c.DeviceListStrategy = nil
	diags.Append(m.DeviceListStrategy.ElementsAs(ctx, &c.DeviceListStrategy, false)...)
	c.TimeSlicing = m.TimeSlicing.toKube()
	c.MPS = m.MPS.toKube()
	return c, diags
}

func (m *devicePluginSharingModel) toKube() *kube.SharingConfig {
	if m == nil {
		return nil
	}
	s := &kube.SharingConfig{RenameByDefault: m.RenameByDefault.ValueBool()}
	if !m.FailRequestsGreaterThanOne.IsNull() {
		v := m.FailRequestsGreaterThanOne.ValueBool()
		s.FailRequestsGreaterThanOne = &v
	}
	for _, r := range m.Resources {
		name := r.Name.ValueString()
		if r.Name.IsNull() {
			name = gpulabels.ResourceName
		}
		s.Resources = append(s.Resources, kube.SharedResource{Name: name, Replicas: r.Replicas.ValueInt64(), Rename: r.Rename.ValueString()})
	}
	return s
}

// devicePluginConfigFromKube is the block that describes c. A config with
// the plugin's defaults only is no block, unless the prior state had one.
func devicePluginConfigFromKube(c kube.DevicePluginConfig, prior *devicePluginConfigModel) *devicePluginConfigModel {
	if prior == nil && reflect.DeepEqual(c, kube.DefaultDevicePluginConfig()) {
		return nil
	}
	return &devicePluginConfigModel{
		MIGStrategy:        types.StringValue(c.MIGStrategy),
		FailOnInitError:    types.BoolValue(c.FailOnInitError),
		PassDeviceSpecs:    types.BoolValue(c.PassDeviceSpecs),
		DeviceListStrategy: listDefaultStrings(c.DeviceListStrategy...),
		DeviceIDStrategy:   types.StringValue(c.DeviceIDStrategy),
		TimeSlicing:        devicePluginSharingFromKube(c.TimeSlicing),
		MPS:                devicePluginSharingFromKube(c.MPS),
	}
}

func devicePluginSharingFromKube(s *kube.SharingConfig) *devicePluginSharingModel {
	if s == nil {
		return nil
	}
	m := &devicePluginSharingModel{RenameByDefault: types.BoolValue(s.RenameByDefault), FailRequestsGreaterThanOne: types.BoolNull()}
	if s.FailRequestsGreaterThanOne != nil {
		m.FailRequestsGreaterThanOne = types.BoolValue(*s.FailRequestsGreaterThanOne)
	}
	for _, r := range s.Resources {
		rename := types.StringNull()
		if r.Rename != "" {
			rename = types.StringValue(r.Rename)
		}
		m.Resources = append(m.Resources, devicePluginSharedResourceModel{
			Name: types.StringValue(r.Name), Replicas: types.Int64Value(r.Replicas), Rename: rename,
		})
	}
	return m
}

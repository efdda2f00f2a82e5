package provider

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// awsBlockModel is the provider's `aws` block.
type awsBlockModel struct {
	Region    types.String       `tfsdk:"region"`
	Profile   types.String       `tfsdk:"profile"`
	Endpoints *awsEndpointsModel `tfsdk:"endpoints"`
}

type awsEndpointsModel struct {
	EKS         types.String `tfsdk:"eks"`
	EC2         types.String `tfsdk:"ec2"`
	AutoScaling types.String `tfsdk:"autoscaling"`
	STS         types.String `tfsdk:"sts"`
}

// awsRegionPattern matches region names such as us-east-1, eu-central-2 and us-gov-west-1.
var awsRegionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

func awsBlockSchema() schema.SingleNestedBlock {
	endpoint := func(service string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Custom " + service + " endpoint URL, e.g. a VPC endpoint or the local testbed's emulator.",
		}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "AWS settings, for `gpu_node_group`, `gpu_inventory` with `source = \"ec2\"` and the `kubernetes` block's `eks`. " +
			"Credentials come from the AWS SDK's default chain: environment variables, shared config and " +
			"credentials files, SSO, web identity (how Terraform Cloud's dynamic provider credentials arrive) and instance roles. " +
			"Unset endpoints follow the SDK's `AWS_ENDPOINT_URL_<SERVICE>` variables (`AWS_ENDPOINT_URL_EKS`, `_EC2`, `_AUTO_SCALING`, `_STS`).",
		Attributes: map[string]schema.Attribute{
			"region": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "AWS region, e.g. `us-east-1`. Defaults to `AWS_REGION` / `AWS_DEFAULT_REGION` or the profile's region.",
			},
			"profile": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Named profile of the shared AWS config and credentials files. Defaults to `AWS_PROFILE`.",
			},
		},
		Blocks: map[string]schema.Block{
			"endpoints": schema.SingleNestedBlock{
				MarkdownDescription: "Service endpoint overrides, for private endpoints and the local testbed.",
				Attributes: map[string]schema.Attribute{
					"eks":         endpoint("EKS"),
					"ec2":         endpoint("EC2"),
					"autoscaling": endpoint("Auto Scaling"),
					"sts":         endpoint("STS"),
				},
			},
		},
	}
}

func (m *awsBlockModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	if m == nil {
		return diags
	}
	if r := m.Region; !r.IsNull() && !r.IsUnknown() && !awsRegionPattern.MatchString(r.ValueString()) {
		diags.AddAttributeError(path.Root("aws").AtName("region"), "Invalid aws provider configuration",
			"aws.region "+quote(r.ValueString())+" is not an AWS region name: write it like us-east-1 or eu-central-1")
	}
	if e := m.Endpoints; e != nil {
		for name, v := range map[string]types.String{"eks": e.EKS, "ec2": e.EC2, "autoscaling": e.AutoScaling, "sts": e.STS} {
			if v.IsNull() || v.IsUnknown() {
				continue
			}
			if problem := checkHTTPURL(v.ValueString()); problem != "" {
				diags.AddAttributeError(path.Root("aws").AtName("endpoints").AtName(name), "Invalid aws provider configuration",
					"aws.endpoints."+name+" "+problem+": write it as https://HOST[:PORT]")
			}
		}
	}
	return diags
}

// settings is the block as the eks package takes it; nil block, zero
// settings (the SDK's defaults and environment).
func (m *awsBlockModel) settings(userAgent string) eks.Settings {
	s := eks.Settings{UserAgent: userAgent, ProfileSetting: "aws.profile"}
	if m == nil {
		return s
	}
	s.Region = m.Region.ValueString()
	s.Profile = m.Profile.ValueString()
	if e := m.Endpoints; e != nil {
		s.Endpoints = eks.Endpoints{
			EKS:         e.EKS.ValueString(),
			EC2:         e.EC2.ValueString(),
			AutoScaling: e.AutoScaling.ValueString(),
			STS:         e.STS.ValueString(),
		}
	}
	return s
}

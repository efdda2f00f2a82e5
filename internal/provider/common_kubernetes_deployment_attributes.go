package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// Attributes that gpu_device_plugin and gpu_dra_driver, which both deploy
// node agents as DaemonSets in a namespace they may create, describe alike.

func deleteNamespaceIfNotEmptyAttribute() schema.BoolAttribute {
	return schema.BoolAttribute{
		Optional: true,
		Computed: true,
		Default:  booldefault.StaticBool(false),
		MarkdownDescription: "What destroy does with a namespace this resource created when other objects were put in it since " +
			"(an NGC pull Secret, a ConfigMap, another release). `false` (the default) keeps the namespace and those objects and says so " +
			"in a warning; `true` deletes the namespace with everything in it. A namespace this resource did not create is never deleted.",
	}
}

// imagePullPolicyAttribute is the pull policy of the containers of.
func imagePullPolicyAttribute(of string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional:            true,
		Computed:            true,
		Default:             stringdefault.StaticString("IfNotPresent"),
		MarkdownDescription: "Pull policy of " + of + ". Valid values are: " + backtickList(devicePluginPullPolicies) + ". Defaults to `IfNotPresent`.",
		Validators:          []validator.String{stringvalidator.OneOf(devicePluginPullPolicies...)},
	}
}

// gpuNodeTolerationsAttribute is the tolerations of pods that run on
// every GPU node.
func gpuNodeTolerationsAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional: true,
		Computed: true,
		Default:  listdefault.StaticValue(defaultDevicePluginTolerations()),
		MarkdownDescription: "Tolerations of the pods. Defaults to `nvidia.com/gpu` `Exists` `NoSchedule` (the taint GPU nodes carry) " +
			"and `CriticalAddonsOnly` `Exists`; setting the list replaces both.",
		NestedObject: schema.NestedAttributeObject{Attributes: tolerationAttributes()},
	}
}

// priorityClassNameAttribute is the PriorityClass of the pods, defaulting
// to fallback; why says why that default.
func priorityClassNameAttribute(fallback, why string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional:            true,
		Computed:            true,
		Default:             stringdefault.StaticString(fallback),
		MarkdownDescription: "PriorityClass of the pods" + why + ". Defaults to `" + fallback + "`; `\"\"` for none.",
		Validators:          []validator.String{stringvalidator.Any(stringvalidator.OneOf(""), dns1123SubdomainValidator{})},
	}
}

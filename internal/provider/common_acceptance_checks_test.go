package provider

import (
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
)

// wrapped matches words as Terraform prints them in an error, where any
// space may have become a line break.
func wrapped(words ...string) *regexp.Regexp {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = strings.Join(strings.Fields(regexp.QuoteMeta(w)), `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(parts, `.*`))
}

// expectTainted is a plan-only step: with the configuration unchanged, the
// plan replaces address, destroying it first, as it does a tainted resource.
func expectTainted(config, address string) resource.TestStep {
	return resource.TestStep{
		Config:             config,
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{
			PostApplyPreRefresh: []plancheck.PlanCheck{plancheck.ExpectResourceAction(address, plancheck.ResourceActionDestroyBeforeCreate)},
		},
	}
}

package provider

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/stretchr/testify/require"
)

// The page of gpu_workload says which job settings change a running Job
// in place, in its description (built from jobInPlaceSettings) and in its
// "replace or update" section (written in the template). These tests hold
// both, and the plan, to one list.

func TestWorkloadJobInPlaceSettingsAreWhatThePlanDoes(t *testing.T) {
	for name, row := range jobChanges {
		setting, ok := strings.CutPrefix(name, "job.")
		if !ok || row.change == nil {
			continue
		}
		require.Equal(t, !slices.Contains(jobInPlaceSettings, setting), row.replace,
			"job.%s: jobInPlaceSettings (the page) and the plan (jobChanges, checked against ModifyPlan) disagree", setting)
	}
	for _, setting := range jobInPlaceSettings {
		require.Contains(t, jobChanges, "job."+setting, "every in-place setting has a row that the plan is checked against")
	}
}

func TestWorkloadPageStatesTheInPlaceJobSettings(t *testing.T) {
	data, err := os.ReadFile("../../docs/resources/workload.md")
	require.NoError(t, err)
	page := string(data)
	require.Contains(t, page, backtickList(jobInPlaceSettings), "the description lists them (run make generate)")

	start := strings.Index(page, "## Changes: replace or update")
	require.GreaterOrEqual(t, start, 0)
	section := page[start+3:]
	section = section[:strings.Index(section, "\n## ")]
	jobBlock, ok := workloadSchema(context.Background()).Blocks["job"].(schema.SingleNestedBlock)
	require.True(t, ok)
	jobAttrs := jobBlock.Attributes
	var named []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if _, ok := jobAttrs[m[1]]; ok && !slices.Contains(named, m[1]) {
			named = append(named, m[1])
		}
	}
	require.ElementsMatch(t, jobInPlaceSettings, named,
		"the section names exactly the job settings that change in place (templates/resources/workload.md.tmpl)")
	require.NotContains(t, section, "change to anything", "the old sentence said every Job change replaces it")
}

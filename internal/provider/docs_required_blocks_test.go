package provider

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/stretchr/testify/require"
)

// requiredBlockLine is how a resource page lists its required blocks: the
// plugin framework gives blocks no Required flag (a validator refuses a
// configuration without them), so tfplugindocs lists every block under
// Optional, and the template says it above the schema.
var requiredBlockLine = regexp.MustCompile(`(?m)^\*\*Required blocks:\*\* (.*)$`)

// requiredBlocks are the top-level blocks of s whose validators refuse a
// configuration without them (listvalidator / objectvalidator IsRequired).
func requiredBlocks(ctx context.Context, s schema.Schema) []string {
	var names []string
	required := func(description string) bool { return strings.Contains(description, "marked it as required") }
	for name, block := range s.Blocks {
		switch b := block.(type) {
		case schema.SingleNestedBlock:
			for _, v := range b.Validators {
				if required(v.Description(ctx)) {
					names = append(names, name)
				}
			}
		case schema.ListNestedBlock:
			for _, v := range b.Validators {
				if required(v.Description(ctx)) {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

func TestRequiredBlocksAreListedAsRequiredOnTheirPages(t *testing.T) {
	ctx := context.Background()
	for _, newResource := range New("test")().Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "gpu"}, &meta)
		var resp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &resp)
		want := requiredBlocks(ctx, resp.Schema)
		page, err := os.ReadFile("../../docs/resources/" + strings.TrimPrefix(meta.TypeName, "gpu_") + ".md")
		require.NoError(t, err, meta.TypeName)
		var listed []string
		if m := requiredBlockLine.FindSubmatch(page); m != nil {
			for _, name := range regexp.MustCompile("`([a-z_]+)`").FindAllSubmatch(m[1], -1) {
				listed = append(listed, string(name[1]))
			}
		}
		slices.Sort(listed)
		require.Equal(t, want, listed, "%s: its page's **Required blocks:** line", meta.TypeName)
	}
}

package provider

import (
	"context"
	// digest.Digest.Validate needs the hash functions of "sha256:" and
	// "sha512:" digests registered, as the kubelet's image parser does.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/distribution/reference"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = imageReferenceValidator{}

// imageReferenceValidator accepts the container image references a kubelet
// can pull, and nothing else. The API server only checks that an image is
// not empty and has no leading or trailing whitespace; the kubelet parses
// it when it starts the container (k8s.io/kubernetes/pkg/util/parsers
// ParseImageName, with github.com/distribution/reference's
// ParseNormalizedNamed) and fails the pod with InvalidImageName when that
// parse fails, long after the apply began waiting. This runs the same parse
// at plan: [registry[:port]/]repository[:tag][@digest], a lowercase
// repository, no whitespace anywhere.
type imageReferenceValidator struct{}

func (imageReferenceValidator) Description(context.Context) string {
	return "value must be a container image reference: [registry[:port]/]repository[:tag][@sha256:digest], lowercase repository, no whitespace"
}

func (v imageReferenceValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (imageReferenceValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	image := req.ConfigValue.ValueString()
	if problem := imageReferenceProblem(image); problem != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid image reference",
			req.Path.String()+" "+quote(image)+" is not an image reference a kubelet can pull: "+problem+
				". Write it as registry/repository:tag or registry/repository@sha256:digest, e.g. \"nvcr.io/nvidia/pytorch:24.05-py3\".")
	}
}

// imageReferenceProblem says what is wrong with image, or "" when the
// kubelet would accept it.
func imageReferenceProblem(image string) string {
	if image == "" {
		return "it is empty"
	}
	if i := strings.IndexFunc(image, unicode.IsSpace); i >= 0 {
		return fmt.Sprintf("it contains whitespace at character %d", utf8.RuneCountInString(image[:i])+1)
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return err.Error()
	}
	return ""
}

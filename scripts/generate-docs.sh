#!/usr/bin/env bash
# Regenerates docs/ from the provider's schema, templates/ and examples/,
# without network access (apart from the Go module proxy for tools/).
#
# tfplugindocs would normally download a Terraform CLI and build the provider
# itself. Instead this script:
#   1. builds the provider into a temporary directory,
#   2. asks a local Terraform CLI for `terraform providers schema -json`, with a
#      dev_overrides CLI configuration pointing gpuinfra/gpu at that build (no
#      `terraform init`, no registry),
#   3. checks that every attribute and block has a description,
#   4. formats examples/ with `terraform fmt`, so that docs embed formatted code,
#   5. runs tfplugindocs (pinned in tools/go.mod) with --providers-schema, then
#      its `validate` check of the result.
#
# Environment:
#   TERRAFORM  path of the Terraform CLI (default: the testbed's build,
#              ~/.cache/terraform-provider-gpu/bin/terraform-v1.5.7/terraform, under
#              $GPU_TESTBED_CACHE or $XDG_CACHE_HOME when set; `make testbed` or
#              `go install github.com/hashicorp/terraform@v1.5.7` makes it)
#
# Running it twice changes nothing the second time, so CI can run it and fail
# when `git status --porcelain docs examples templates` is not empty.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The same cache the testbed builds Terraform into (internal/testbed/cache.go).
cache_root="${GPU_TESTBED_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/terraform-provider-gpu}"
terraform="${TERRAFORM:-${cache_root}/bin/terraform-v1.5.7/terraform}"

# The address main.go serves and the schema key Terraform reports for it.
provider_source="gpuinfra/gpu"
provider_address="registry.terraform.io/${provider_source}"
provider_name="gpu"

if [[ ! -x "${terraform}" ]]; then
	echo "generate-docs: no Terraform CLI at ${terraform}" >&2
	echo "generate-docs: run 'make testbed' (builds Terraform v1.5.7 into that cache), or set TERRAFORM to a Terraform CLI" >&2
	exit 1
fi
if ! command -v jq >/dev/null 2>&1; then
	echo "generate-docs: jq is needed (apt-get install jq)" >&2
	exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-generate-docs.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/bin" "${work}/config"

echo "generate-docs: building the provider"
(cd "${root}" && CGO_ENABLED=0 go build -o "${work}/bin/terraform-provider-${provider_name}" .)

cat >"${work}/terraformrc" <<CONFIG
provider_installation {
  dev_overrides {
    "${provider_source}" = "${work}/bin"
  }
}
CONFIG

cat >"${work}/config/main.tf" <<CONFIG
terraform {
  required_providers {
    ${provider_name} = {
      source = "${provider_source}"
    }
  }
}
CONFIG

# Every terraform command below uses that CLI configuration, whatever the
# caller's environment says, and never calls home.
export TF_CLI_CONFIG_FILE="${work}/terraformrc"
export TF_IN_AUTOMATION=1
export CHECKPOINT_DISABLE=1
export TF_DATA_DIR="${work}/config/.terraform"
unset TF_CLI_ARGS TF_CLI_ARGS_providers TF_CLI_ARGS_fmt

echo "generate-docs: exporting the provider schema with $("${terraform}" version | sed -n 1p)"
# dev_overrides makes `terraform init` unnecessary; Terraform warns about the
# override on stderr, which is kept out of the JSON and shown only on failure.
if ! "${terraform}" -chdir="${work}/config" providers schema -json >"${work}/schema.terraform.json" 2>"${work}/terraform.stderr"; then
	cat "${work}/terraform.stderr" >&2
	exit 1
fi

# tfplugindocs looks the schema up as "<provider-name>" or
# "registry.terraform.io/hashicorp/<provider-name>", so re-key ours.
jq -e --arg from "${provider_address}" --arg to "${provider_name}" '
	if .provider_schemas[$from] == null then error("no schema for \($from) in terraform providers schema -json") else . end
	| .provider_schemas |= {($to): .[$from]}
' "${work}/schema.terraform.json" >"${work}/schema.json"

# Every attribute and block needs a description: the docs are made from them.
undescribed="$(jq -r '
	def missing($p):
		((.attributes // {}) | to_entries[] as $e
			| (if ($e.value.description // "") == "" then "\($p).\($e.key)" else empty end),
			  ($e.value.nested_type // empty | missing("\($p).\($e.key)"))),
		((.block_types // {}) | to_entries[] as $e
			| (if ($e.value.block.description // "") == "" then "\($p).\($e.key)" else empty end),
			  ($e.value.block | missing("\($p).\($e.key)")));
	def described($kind):
		to_entries[] as $r
		| (if ($r.value.block.description // "") == "" then "\($kind) \($r.key)" else empty end),
		  ($r.value.block | missing("\($kind) \($r.key)"));
	.provider_schemas[]
	| (.provider.block | missing("provider")),
	  ((.resource_schemas // {}) | described("resource")),
	  ((.data_source_schemas // {}) | described("data source")),
	  ((.ephemeral_resource_schemas // {}) | described("ephemeral resource"))
' "${work}/schema.json")"
if [[ -n "${undescribed}" ]]; then
	echo "generate-docs: these have no description in the schema; set MarkdownDescription:" >&2
	echo "${undescribed}" | sed 's/^/  /' >&2
	exit 1
fi

echo "generate-docs: formatting examples/"
"${terraform}" fmt -recursive "${root}/examples"

echo "generate-docs: building tfplugindocs (version pinned in tools/go.mod)"
go -C "${root}/tools" build -o "${work}/tfplugindocs" github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs

echo "generate-docs: rendering docs/ with tfplugindocs"
"${work}/tfplugindocs" generate \
	--provider-dir "${root}" \
	--provider-name "${provider_name}" \
	--providers-schema "${work}/schema.json" \
	--website-temp-dir "${work}/website"

echo "generate-docs: validating docs/"
"${work}/tfplugindocs" validate \
	--provider-dir "${root}" \
	--provider-name "${provider_name}" \
	--providers-schema "${work}/schema.json"

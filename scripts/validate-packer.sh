#!/usr/bin/env bash
# Checks the Packer templates under examples/packer with the Packer CLI that
# `make testbed` builds (v1.9.4, tools/packer), offline and without cloud
# credentials:
#
#   - every template directory: `packer fmt -check`;
#   - every template directory: `packer validate` — HCL syntax, unknown or
#     missing arguments, variable types and validation rules, and each
#     builder's and provisioner's own config checks (amazon-ebs: ami_name,
#     source_ami_filter, ...; file: that the source exists). It does not call
#     AWS: AMI filters, instance types, regions and credentials are checked
#     only by `packer build`;
#   - a directory whose template says "NOT validated in CI" needs a plugin
#     that Packer v1.9.4 does not bundle (which `packer init` would download):
#     it gets `packer validate -syntax-only` only.
#
# Environment:
#   PACKER  path of the Packer CLI (default: `gpu-testbed env --packer-path`)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

packer="${PACKER:-}"
if [[ -z "${packer}" ]]; then
	if ! packer="$(go run ./cmd/gpu-testbed env --packer-path)"; then
		echo "validate-packer: no Packer CLI; run 'make testbed' (builds Packer into the testbed cache) or set PACKER" >&2
		exit 1
	fi
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-validate-packer.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/home" "${work}/plugins"

# No credentials, no instance metadata, no plugins or config of the caller's,
# no calls home: validate must pass on a machine that has none of them.
while IFS= read -r name; do
	unset "${name}"
done < <(env | sed -n 's/^\(AWS_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(PROXMOX_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(PKR_VAR_[A-Za-z0-9_]*\)=.*/\1/p')
export HOME="${work}/home"
export PACKER_CONFIG_DIR="${work}/home"
export PACKER_PLUGIN_PATH="${work}/plugins"
export AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_CONFIG_FILE=/dev/null
export AWS_EC2_METADATA_DISABLED=true
export CHECKPOINT_DISABLE=1
unset PACKER_LOG

echo "validate-packer: $("${packer}" version | sed -n 1p)"

dirs=()
while IFS= read -r dir; do
	dirs+=("${dir}")
done < <(find examples/packer -name '*.pkr.hcl' -printf '%h\n' | sort -u)
if ((${#dirs[@]} == 0)); then
	echo "validate-packer: no *.pkr.hcl under examples/packer" >&2
	exit 1
fi

failed=0
validated=0
for dir in "${dirs[@]}"; do
	if ! "${packer}" fmt -check "${dir}" >"${work}/fmt.out" 2>&1; then
		echo "FAIL ${dir}: not formatted; run: packer fmt ${dir}" >&2
		cat "${work}/fmt.out" >&2
		failed=1
	fi

	if grep -qs 'NOT validated in CI' "${dir}"/*.pkr.hcl; then
		if "${packer}" validate -syntax-only "${dir}" >"${work}/validate.out" 2>&1; then
			echo "ok   ${dir} (syntax only: NOT validated in CI, see its README)"
		else
			echo "FAIL ${dir}: packer validate -syntax-only" >&2
			cat "${work}/validate.out" >&2
			failed=1
		fi
		continue
	fi

	if "${packer}" validate "${dir}" >"${work}/validate.out" 2>&1; then
		echo "ok   ${dir}"
		validated=$((validated + 1))
	else
		echo "FAIL ${dir}: packer validate" >&2
		cat "${work}/validate.out" >&2
		failed=1
	fi
done

if ((failed)); then
	exit 1
fi
if ((validated == 0)); then
	echo "validate-packer: no template was fully validated" >&2
	exit 1
fi

package provider

// This file owns the type of every integer attribute a user writes
// (gpu.count, replicas, ports, seconds, ...): wholeNumberType.
//
// Terraform has one number type, so `count = 1.5` reaches the provider as
// a number like any other. The framework's types.Int64Type refuses it while
// converting the configuration, before any validator runs, and the user
// reads "An unexpected error was encountered trying to convert an attribute
// value ... This is always an error in the provider ... Value 1.5 is not an
// integer." wholeNumberType instead lets the conversion through (as an
// unknown value, which no validator or model acts on) and reports
// "gpu.count must be a whole number" from its Validate, which the framework
// calls with the raw number and the attribute's path.
//
// Why Validate on the type and not xattr.ValidateableAttribute on a value:
// the framework runs ValidateAttribute on the converted value, so a
// fractional number would need a value type of its own, and every model
// field (types.Int64 today) would have to become that type or fail to
// convert. TypeWithValidate is deprecated in favor of ValidateableAttribute
// for that reason only; the framework still calls it (fwschemadata
// ValueAtPath), and basetypes.Int64Type itself implements it.
//
// Models keep types.Int64: whole numbers convert to basetypes.Int64Value as
// before, and Equal accepts basetypes.Int64Type so that objects holding
// these attributes (a toleration) accept the values the framework builds.

import (
	"context"
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

var _ basetypes.Int64Typable = wholeNumberType{}

// wholeNumberType is basetypes.Int64Type that rejects a fraction or a
// number beyond 64 bits with an error naming the attribute, instead of the
// framework's conversion error. Set it as the CustomType of every Int64
// attribute a configuration can set (TestIntegerAttributesRejectFractions
// holds every schema to that).
type wholeNumberType struct {
	basetypes.Int64Type
}

// String names the type in framework errors.
func (wholeNumberType) String() string { return "provider.wholeNumberType" }

// Equal accepts basetypes.Int64Type too: the values this type produces
// are basetypes.Int64Value, whose Type is basetypes.Int64Type.
func (wholeNumberType) Equal(o attr.Type) bool {
	switch o.(type) {
	case wholeNumberType, basetypes.Int64Type:
		return true
	}
	return false
}

// ValueType is the value the models hold.
func (wholeNumberType) ValueType(context.Context) attr.Value { return basetypes.Int64Value{} }

// ValueFromTerraform converts a whole number as basetypes.Int64Type does,
// and anything else (which Validate reports) to an unknown value.
func (t wholeNumberType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	if _, ok := notWholeNumber(in); ok {
		return basetypes.NewInt64Unknown(), nil
	}
	return t.Int64Type.ValueFromTerraform(ctx, in)
}

// Validate reports a fraction, or a whole number beyond 64 bits, at p.
func (wholeNumberType) Validate(_ context.Context, in tftypes.Value, p path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	problem, ok := notWholeNumber(in)
	if !ok {
		return diags
	}
	diags.AddAttributeError(p, "Not a whole number", p.String()+" must be a whole number: "+problem)
	return diags
}

// notWholeNumber says why in, a known number, is no int64, or reports
// false when it is one (or is null, unknown or not a number, which the
// framework handles).
func notWholeNumber(in tftypes.Value) (string, bool) {
	if in.Type() == nil || !in.Type().Equal(tftypes.Number) || !in.IsKnown() || in.IsNull() {
		return "", false
	}
	var f *big.Float
	if err := in.As(&f); err != nil || f == nil {
		return "", false
	}
	text := f.Text('g', -1)
	if !f.IsInt() {
		below, _ := f.Int(nil) // toward zero
		if f.Sign() < 0 {
			below.Sub(below, big.NewInt(1))
		}
		above := new(big.Int).Add(below, big.NewInt(1))
		return fmt.Sprintf("%s has a fraction. Write %s or %s.", text, below, above), true
	}
	if _, accuracy := f.Int64(); accuracy != big.Exact {
		return fmt.Sprintf("%s is outside the 64-bit range (%d to %d).", text, int64(-1<<63), int64(1<<63-1)), true
	}
	return "", false
}

package proxmox

import "fmt"

// FieldKind names a part of a VMSpec.
type FieldKind int

// The parts of a VMSpec that errors and findings point at.
const (
	FieldNode FieldKind = iota + 1
	FieldVMID
	FieldName
	FieldCores
	FieldSockets
	FieldCPUType
	FieldMemory
	FieldMachine
	FieldBIOS
	FieldEFIDisk
	// FieldGPUs is the GPU list as a whole (its length, its order).
	FieldGPUs
	// FieldGPU is GPUs[Field.GPU] as a whole; the kinds after it are one
	// of its parts.
	FieldGPU
	FieldGPUMapping
	FieldGPUPCIAddress
	FieldGPUMdev
)

// Field is the part of a VMSpec an error or a finding is about, so that
// the caller can point at what to fix in its own terms (the provider: an
// attribute path) while this package names none of them.
type Field struct {
	Kind FieldKind
	// GPU is the index in VMSpec.GPUs for FieldGPU and its parts.
	GPU int
}

// GPUField is part kind of GPUs[i].
func GPUField(kind FieldKind, i int) Field { return Field{Kind: kind, GPU: i} }

// gpuAddressField is the field naming GPUs[i]'s device: its mapping or its
// address.
func gpuAddressField(g GPU, i int) Field {
	if g.Mapping != "" {
		return GPUField(FieldGPUMapping, i)
	}
	return GPUField(FieldGPUPCIAddress, i)
}

// FieldError is an error about one field of a spec.
type FieldError struct {
	Field Field
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// fieldErrorf is a *FieldError on field.
func fieldErrorf(field Field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

package nvml

import (
	"context"
	"errors"
)

// Placeholder until the sampler lands (issue 16): replaced by the real
// implementation in this file.

var _ Telemetry = (*GPUs)(nil)

// Sample reads the GPUs once.
func (g *GPUs) Sample(opts SampleOptions) (TelemetrySample, error) {
	return TelemetrySample{}, errors.New("not implemented")
}

// WatchEvents reports NVML events until ctx ends.
func (g *GPUs) WatchEvents(ctx context.Context) (<-chan Event, error) {
	return nil, errors.New("not implemented")
}

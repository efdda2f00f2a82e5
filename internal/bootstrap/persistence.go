package bootstrap

import "context"

type persistenceStep struct{}

func newPersistenceStep() Step { return persistenceStep{} }

func (persistenceStep) Name() string { return "persistence" }

func (s persistenceStep) Plan(ctx context.Context, h *Host) ([]Change, error) { return nil, nil }

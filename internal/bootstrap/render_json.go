package bootstrap

// PlanJSON is a plan as `gpu-bootstrap plan --json` prints it, for
// automation (Ansible, a Terraform external data source, CI checks).
type PlanJSON struct {
	Changes int            `json:"changes"` // 0 when the host already matches
	Steps   []StepPlanJSON `json:"steps"`
}

// StepPlanJSON is one step of a PlanJSON.
type StepPlanJSON struct {
	Step     string       `json:"step"`
	Changes  []ChangeJSON `json:"changes"`
	Warnings []string     `json:"warnings,omitempty"`
	Notes    []string     `json:"notes,omitempty"`
}

// ChangeJSON is one change of a PlanJSON: the file it writes (with the
// unified diff), or its ops as the plan lists them (commands, file writes
// and removals, checks), or neither for a GPU action.
type ChangeJSON struct {
	Summary  string   `json:"summary"`
	File     string   `json:"file,omitempty"`
	Diff     string   `json:"diff,omitempty"`
	Commands []string `json:"commands,omitempty"`
	Restart  string   `json:"restart,omitempty"`
	Note     string   `json:"note,omitempty"`
	Reboot   bool     `json:"reboot,omitempty"`
}

// JSON is the plan in its --json form.
func (p Plan) JSON() PlanJSON {
	out := PlanJSON{Changes: p.Count(), Steps: make([]StepPlanJSON, 0, len(p))}
	for _, step := range p {
		sp := StepPlanJSON{Step: step.Step, Changes: make([]ChangeJSON, 0, len(step.Changes)), Warnings: step.Warnings, Notes: step.Notes}
		for _, change := range step.Changes {
			c := ChangeJSON{Summary: change.Summary, Restart: change.Restart, Note: change.Note, Reboot: change.Reboot}
			if file := change.File(); file != nil {
				c.File, c.Diff = file.Path, FileDiff(file)
			} else {
				c.Commands = opsLines(change.Ops)
			}
			sp.Changes = append(sp.Changes, c)
		}
		out.Steps = append(out.Steps, sp)
	}
	return out
}

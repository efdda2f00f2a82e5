package bootstrap

import (
	"sort"
)

// This file holds what the plan does to each step's changes before Apply
// sees them: the order of a step's file writes (so that a run killed between
// two files leaves a config that loads) and the plan's word on symbolic
// links a write goes through. apply_partial.go accounts for a run that
// stopped part way.

// orderFileWrites puts a step's new files before its edits of existing
// files, keeping every other change (commands, GPU actions) where it is and
// the order within each group. A drop-in nothing loads yet, or one the
// engine loads on its own, is complete before the main config that imports
// it or drops a setting it takes over is rewritten, so a process killed
// between the two writes leaves an engine config that loads: each file is
// replaced atomically (writeAtomic), and the engine sees either the old
// main file with an extra self-contained drop-in, or the new one with all
// it refers to.
func orderFileWrites(changes []Change) {
	var slots []int
	var files []Change
	for i, c := range changes {
		if c.File() != nil {
			slots = append(slots, i)
			files = append(files, c)
		}
	}
	sort.SliceStable(files, func(a, b int) bool {
		return files[a].File().Created() && !files[b].File().Created()
	})
	for i, slot := range slots {
		changes[slot] = files[i]
	}
}

// noteSymlinks adds to the summary of each file change whose path goes
// through a symbolic link under the root which file is written in the end
// (the link's target, resolved inside the root; the link is kept).
func (h *Host) noteSymlinks(changes []Change) {
	if h.live() {
		return
	}
	for i := range changes {
		file := changes[i].File()
		if file == nil {
			continue
		}
		_, res, err := h.resolvePath(file.Path)
		if err != nil {
			continue // apply reports it
		}
		if note := describeLinks(file.Path, res); note != "" {
			changes[i].Summary += " (" + note + ")"
		}
	}
}

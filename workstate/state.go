package workstate

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// WorkItem is one item of the task state.
type WorkItem struct {
	Description string `json:"description"`
	Status      string `json:"status"`
	VerifiedBy  string `json:"verifiedBy,omitempty"`
}

// State is the task state update_task_state keeps (tool-schemas.md §8).
type State struct {
	Goal          string     `json:"goal,omitempty"`
	Constraints   []string   `json:"constraints,omitempty"`
	Decisions     []string   `json:"decisions,omitempty"`
	WorkItems     []WorkItem `json:"workItems,omitempty"`
	FilesTouched  []string   `json:"filesTouched,omitempty"`
	OpenQuestions []string   `json:"openQuestions,omitempty"`
	NextStep      string     `json:"nextStep,omitempty"`
	UpdatedAt     string     `json:"updatedAt,omitempty"`
}

// Empty says whether nothing was ever recorded.
func (s State) Empty() bool {
	return s.Goal == "" && len(s.Constraints) == 0 && len(s.Decisions) == 0 && len(s.WorkItems) == 0 &&
		len(s.FilesTouched) == 0 && len(s.OpenQuestions) == 0 && s.NextStep == ""
}

// State reads state.json; a missing one is the empty State.
func (s Store) State(ctx context.Context) (State, error) {
	path, err := s.readPath(StateFile)
	if err != nil {
		return State{}, err
	}
	data, err := read(ctx, path, MaxStateBytes)
	if err != nil || data == nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("work state %s: %w", path, err)
	}
	return st, nil
}

// Patch lays patch's fields over the stored state (each given field
// replaces the old value whole, arrays included), stamps updatedAt and
// writes the result atomically. The new state is returned even when the
// write fails, with the error.
func (s Store) Patch(ctx context.Context, patch State, fields []string) (State, error) {
	dir, unlock, err := s.open(ctx)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	st, err := s.State(ctx)
	if err != nil {
		return State{}, err
	}
	for _, f := range fields {
		switch f {
		case "goal":
			st.Goal = patch.Goal
		case "constraints":
			st.Constraints = patch.Constraints
		case "decisions":
			st.Decisions = patch.Decisions
		case "workItems":
			st.WorkItems = patch.WorkItems
		case "filesTouched":
			st.FilesTouched = patch.FilesTouched
		case "openQuestions":
			st.OpenQuestions = patch.OpenQuestions
		case "nextStep":
			st.NextStep = patch.NextStep
		}
	}
	st.UpdatedAt = s.now().UTC().Format(time.RFC3339)
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return st, err
	}
	data = s.redact(data)
	if len(data) > MaxStateBytes {
		return st, fmt.Errorf("the task state would be %d bytes; the limit is %d. Record less: summaries, not contents", len(data), MaxStateBytes)
	}
	path := filepath.Join(dir, StateFile)
	if err := s.writeAtomic(path, append(data, '\n')); err != nil {
		return st, fmt.Errorf("save the task state to %s: %w", path, err)
	}
	return st, nil
}

// Format is the state as markdown, one block per recorded field.
func Format(st State) string {
	var blocks []string
	if st.Goal != "" {
		blocks = append(blocks, "**Goal:** "+st.Goal)
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("**" + title + ":**")
		for _, it := range items {
			b.WriteString("\n- " + it)
		}
		blocks = append(blocks, b.String())
	}
	list("Constraints", st.Constraints)
	list("Decisions", st.Decisions)
	if len(st.WorkItems) > 0 {
		var b strings.Builder
		b.WriteString("**Work items:**")
		for _, w := range st.WorkItems {
			fmt.Fprintf(&b, "\n- [%s] %s", w.Status, w.Description)
			if w.VerifiedBy != "" {
				fmt.Fprintf(&b, " (verified by: %s)", w.VerifiedBy)
			}
		}
		blocks = append(blocks, b.String())
	}
	list("Files touched", st.FilesTouched)
	list("Open questions", st.OpenQuestions)
	if st.NextStep != "" {
		blocks = append(blocks, "**Next step:** "+st.NextStep)
	}
	return strings.Join(blocks, "\n\n")
}

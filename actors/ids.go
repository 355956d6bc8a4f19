package actors

import (
	"fmt"

	"github.com/jazz-run/jazz/messages"
)

// UniqueCallIDs returns calls with ids that are distinct and non-empty,
// for one batch. The model chooses ids and may repeat one; within a batch
// results, events and the transcript pair each call with its result by
// id, so two calls under one id would leave one result unmatched and the
// loop waiting forever. A repeated or empty id gets a fresh one
// (`<id>_2`, `call_<i>`); unique ids are kept exactly as the model sent
// them. The transcript stores the renamed ids too, so every tool message
// answers exactly one call.
func UniqueCallIDs(calls []messages.ToolCall) []messages.ToolCall {
	seen := make(map[string]bool, len(calls))
	for _, c := range calls {
		seen[c.ID] = true
	}
	if len(seen) == len(calls) && !seen[""] {
		return calls
	}
	out := make([]messages.ToolCall, len(calls))
	used := make(map[string]bool, len(calls))
	for i, c := range calls {
		if c.ID != "" && !used[c.ID] {
			used[c.ID] = true
			out[i] = c
			continue
		}
		base := c.ID
		if base == "" {
			base = fmt.Sprintf("call_%d", i)
		}
		id := base
		for n := 2; used[id] || (id != c.ID && seen[id]); n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
		used[id] = true
		c.ID = id
		out[i] = c
	}
	return out
}

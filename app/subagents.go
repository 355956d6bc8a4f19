package app

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/tools"
)

// SubagentTimeoutKey is the optional top-level config key bounding each
// subagent, in milliseconds (default 30 minutes).
const SubagentTimeoutKey = "subagentTimeoutMs"

// maxSubagentTimeout is the longest subagentTimeoutMs accepted.
const maxSubagentTimeout = 24 * time.Hour

// withSubagentTool adds spawn_subagent to the run's tools; an agent
// still gets it only if its tool list names it.
func withSubagentTool(reg *tools.Registry) (*tools.Registry, error) {
	var all []tools.Tool
	for _, n := range reg.Names() {
		if t, ok := reg.Lookup(n); ok {
			all = append(all, *t)
		}
	}
	all = append(all, actors.SubagentTool())
	out, err := tools.NewRegistry(all...)
	if err != nil {
		return nil, fmt.Errorf("add spawn_subagent: %w", err)
	}
	return out, nil
}

// SubagentTimeout reads subagentTimeoutMs: absent means the default; a
// value that is not a whole number of milliseconds between 1 and 24 h is
// a config error naming the key.
func SubagentTimeout(c *config.Config) (time.Duration, error) {
	raw, ok := c.Raw[SubagentTimeoutKey]
	if !ok || string(raw) == "null" {
		return actors.DefaultSubagentTimeout, nil
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil || ms != math.Trunc(ms) || ms < 1 || ms > float64(maxSubagentTimeout.Milliseconds()) {
		return 0, fmt.Errorf("config: %s must be a whole number of milliseconds between 1 and %d, got %s",
			SubagentTimeoutKey, maxSubagentTimeout.Milliseconds(), string(raw))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

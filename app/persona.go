package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/mcptools"
)

// agentPersona is the persona the agent file names, whose instructions
// join the system prompt. One that no longer exists (its file removed)
// is a warning and no persona; a persona file that cannot be used fails
// the run, naming it.
func agentPersona(ctx context.Context, o RunOptions) (personas.Persona, string, error) {
	name := strings.TrimSpace(o.Agent.Config.Persona)
	if name == "" || name == personas.Default {
		return personas.Persona{}, "", nil
	}
	p, err := personas.Lookup(ctx, o.Config.Home, name)
	if errors.Is(err, personas.ErrUnknown) {
		return personas.Persona{}, fmt.Sprintf("Agent %s names a persona that does not exist (%v); it runs without one.", o.Agent.Name, err), nil
	}
	if err != nil {
		return personas.Persona{}, "", fmt.Errorf("agent %s: persona: %w", o.Agent.Name, err)
	}
	return p, "", nil
}

// runNow is the run's start in its timezone; an unknown zone (the CLI
// refuses one) is UTC.
func runNow(o RunOptions) time.Time {
	loc := time.UTC
	if o.Timezone != "" {
		if l, err := time.LoadLocation(o.Timezone); err == nil {
			loc = l
		}
	}
	return time.Now().In(loc)
}

// unknownTools is the warning for the names of an agent's list that jazz
// does not have (an agent file written for another runtime, a typo): said
// once at the start, naming them all, instead of losing them silently.
// have holds what this run offers; a tool jazz defines that this run
// cannot offer (the ask tools with nobody to ask) is not unknown. MCP
// names are left to the MCP warnings.
func unknownTools(agent string, listed []string, have *tools.Registry) string {
	var missing []string
	for _, n := range listed {
		n = strings.TrimSpace(n)
		if t, ok := have.Lookup(n); n == "" || strings.HasPrefix(n, mcptools.Prefix) || ok && !t.Hidden {
			continue
		}
		missing = append(missing, n)
	}
	if len(missing) == 0 {
		return ""
	}
	ref, err := ReferenceRegistry()
	if err != nil {
		return ""
	}
	names := namesOf(ref)
	var unknown, hidden []string
	for _, n := range missing {
		switch {
		case names.Known(n):
		case names.twins[n] != "":
			hidden = append(hidden, fmt.Sprintf("%s (list %s)", n, names.twins[n]))
		default:
			unknown = append(unknown, n)
		}
	}
	unknown = append(unknown, hidden...)
	if len(unknown) == 0 {
		return ""
	}
	return fmt.Sprintf("Agent %s lists %d tool(s) jazz does not have, and runs without them: %s. `jazz tools` lists the tools there are.",
		agent, len(unknown), strings.Join(unknown, ", "))
}

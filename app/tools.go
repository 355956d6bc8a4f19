package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/gittools"
	"github.com/jazz-run/jazz/tools/readtools"
	"github.com/jazz-run/jazz/tools/sessiontools"
	"github.com/jazz-run/jazz/tools/shelltool"
	"github.com/jazz-run/jazz/tools/webtools"
	"github.com/jazz-run/jazz/tools/writetools"
)

// BuiltinRegistry is every built-in tool; an agent gets the subset it
// lists (plus the hidden twins of its pairs).
func BuiltinRegistry(o RunOptions) (*tools.Registry, error) {
	var all []tools.Tool
	all = append(all, readtools.Tools()...)
	all = append(all, writetools.Tools()...)
	all = append(all, shelltool.Tools(shelltool.Options{})...)
	all = append(all, gittools.Tools(gittools.Options{})...)
	all = append(all, sessiontools.Tools()...)
	// JAZZ_NET_ALLOW: ranges the user lets the web tools reach despite
	// the address rules; neither the model nor a project config sets it.
	getenv := getenvOf(o)
	allow, err := webtools.ParseAllow(getenv("JAZZ_NET_ALLOW"))
	if err != nil {
		return nil, err
	}
	all = append(all, webtools.Tools(webtools.Options{Allow: allow, Getenv: getenv})...)
	reg, err := tools.NewRegistry(all...)
	if err != nil {
		return nil, fmt.Errorf("build tool registry: %w", err)
	}
	return reg, nil
}

// commandChecks hands the gate shellguard's analyses.
func commandChecks() gateactor.CommandChecks {
	return gateactor.CommandChecks{
		AllowlistApproves: shellguard.AllowlistApproves,
		StaticClassify:    shellguard.StaticClassify,
		Keys:              shellguard.Keys,
		Judge:             shellguard.JudgeJSON,
		Why:               shellguard.RefusalReason,
		AllowlistNote:     shellguard.AllowlistNote,
	}
}

// Prompt is what the system message is made of besides the agent.
type Prompt struct {
	// Cwd is where the run starts.
	Cwd string
	// Persona is the agent's persona: its instructions follow the
	// agent's.
	Persona personas.Persona
	// Append is --append-system-prompt: added last.
	Append string
	// Now is the run's start in its timezone (--timezone): the date the
	// model is told. Zero leaves the date out.
	Now time.Time
}

// SystemPrompt is the agent's standing instructions: the built-in ones
// (or the agent's own systemPrompt, which replaces them), where the run
// starts and when, the persona's instructions, and --append-system-prompt.
func SystemPrompt(a agents.Agent, p Prompt) string {
	var b strings.Builder
	if own := strings.TrimSpace(a.Config.SystemPrompt); own != "" {
		b.WriteString(own + "\n")
	} else {
		fmt.Fprintf(&b, "You are %s, an AI agent run by jazz.", a.Name)
		if a.Description != "" {
			b.WriteString(" " + a.Description)
		}
		b.WriteString("\nUse the tools you are given when they help; answer directly when they do not. " +
			"Tools that change things need approval; if a call is declined, do not retry it: explain what you could not do.\n")
	}
	fmt.Fprintf(&b, "The current working directory is %s.\n", p.Cwd)
	if !p.Now.IsZero() {
		fmt.Fprintf(&b, "Today is %s (timezone %s).\n", p.Now.Format("Monday, 2 January 2006"), p.Now.Location())
	}
	if instr := strings.TrimSpace(p.Persona.SystemPrompt); instr != "" {
		b.WriteString("\n" + instr + "\n")
	} else if name := strings.TrimSpace(a.Config.Persona); name != "" && name != personas.Default {
		fmt.Fprintf(&b, "Persona: %s.\n", name)
	}
	if extra := strings.TrimSpace(p.Append); extra != "" {
		b.WriteString("\n" + extra + "\n")
	}
	return b.String()
}

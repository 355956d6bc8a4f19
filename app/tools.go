package app

import (
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/gateactor"
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

// SystemPrompt is the agent's standing instructions.
func SystemPrompt(a agents.Agent, cwd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, an AI agent run by jazz.", a.Name)
	if a.Description != "" {
		b.WriteString(" " + a.Description)
	}
	fmt.Fprintf(&b, "\nThe current working directory is %s.\n", cwd)
	b.WriteString("Use the tools you are given when they help; answer directly when they do not. " +
		"Tools that change things need approval; if a call is declined, do not retry it: explain what you could not do.\n")
	if p := strings.TrimSpace(a.Config.Persona); p != "" && p != "default" {
		fmt.Fprintf(&b, "Persona: %s.\n", p)
	}
	return b.String()
}

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
	return builtins(o, func(int) bool { return true })
}

// The built-in tools come in groups, one per package, numbered in
// registration order. A run builds only the groups that define a name
// its agent lists: building every tool's description and schema, and
// copying them from registry to registry, was a tenth of what a
// one-turn run allocated.
const (
	groupRead = iota
	groupWrite
	groupShell
	groupGit
	groupSession
	groupWeb
	builtinGroups // how many there are
)

// groupNames is every name a group defines, hidden twins included,
// separated by spaces; TestBuiltinGroups keeps it equal to what
// buildGroup returns.
func groupNames(g int) string {
	switch g {
	case groupRead:
		return "pwd cd read_file head tail stat ls find glob grep"
	case groupWrite:
		return "write_file execute_write_file edit_file execute_edit_file mkdir execute_mkdir rm execute_rm mv execute_mv cp execute_cp"
	case groupShell:
		return "execute_command execute_execute_command"
	case groupGit:
		return "git_status git_log git_diff git_branch git_blame git_reflog git_tag_list git_add execute_git_add " +
			"git_commit execute_git_commit git_push execute_git_push git_pull execute_git_pull git_checkout execute_git_checkout " +
			"git_merge execute_git_merge git_rm execute_git_rm git_tag execute_git_tag"
	case groupSession:
		return "manage_todos list_todos context_info get_time summarize_context update_task_state update_work_state"
	case groupWeb:
		return "web_fetch http_request"
	}
	return ""
}

// buildGroup builds group g's tools.
func buildGroup(g int, web webtools.Options) []tools.Tool {
	switch g {
	case groupRead:
		return readtools.Tools()
	case groupWrite:
		return writetools.Tools()
	case groupShell:
		return shelltool.Tools(shelltool.Options{})
	case groupGit:
		return gittools.Tools(gittools.Options{})
	case groupSession:
		return sessiontools.Tools()
	case groupWeb:
		return webtools.Tools(web)
	}
	return nil
}

// defines says whether group g defines name.
func defines(g int, name string) bool {
	for rest := groupNames(g); rest != ""; {
		var n string
		n, rest, _ = strings.Cut(rest, " ")
		if n == name {
			return true
		}
	}
	return false
}

// isBuiltin says whether jazz defines a built-in tool (or hidden twin)
// of that name, without building any.
func isBuiltin(name string) bool {
	for g := range builtinGroups {
		if defines(g, name) {
			return true
		}
	}
	return false
}

// agentBuiltins is the groups of BuiltinRegistry that define a name of
// listed: every name listed that BuiltinRegistry has, this has, with the
// same tool, and the names keep their order.
func agentBuiltins(o RunOptions, listed []string) (*tools.Registry, error) {
	return builtins(o, func(g int) bool {
		for _, n := range listed {
			if defines(g, strings.TrimSpace(n)) {
				return true
			}
		}
		return false
	})
}

// builtins builds the groups want takes, in registration order.
func builtins(o RunOptions, want func(group int) bool) (*tools.Registry, error) {
	// JAZZ_NET_ALLOW: ranges the user lets the web tools reach despite
	// the address rules; neither the model nor a project config sets it.
	// A bad value fails every run, with web tools or not.
	getenv := getenvOf(o)
	allow, err := webtools.ParseAllow(getenv("JAZZ_NET_ALLOW"))
	if err != nil {
		return nil, err
	}
	web := webtools.Options{Allow: allow, Getenv: getenv}
	var all []tools.Tool
	for g := range builtinGroups {
		if want(g) {
			all = append(all, buildGroup(g, web)...)
		}
	}
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

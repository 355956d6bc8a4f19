package cli

import (
	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/store/agents"
)

// Shell completion: cobra's `jazz completion <shell>` scripts call
// `jazz __complete`, which completes commands and flag names by itself;
// the values below are what it cannot know. Every function only reads:
// completing must never create JAZZ_HOME or fail loudly.

// fixed completes a flag with a fixed set of values.
func fixed(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// agentNames completes agent names (and ids) from JAZZ_HOME.
func agentNames(d Deps) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		home, err := config.Home(d.Getenv, d.Cwd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		all, _, err := (&agents.Store{Home: home}).List(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, a := range all {
			out = append(out, cobra.CompletionWithDesc(a.Name, a.Model))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// personaNames completes the personas an agent may take.
func personaNames(d Deps) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		home, err := config.Home(d.Getenv, d.Cwd)
		if err != nil {
			home = ""
		}
		return personas.Names(home), cobra.ShellCompDirectiveNoFileComp
	}
}

// oneAgentArg completes the single <id|name> argument of agent commands.
func oneAgentArg(d Deps) cobra.CompletionFunc {
	names := agentNames(d)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cmd, args, toComplete)
	}
}

// registerCompletions attaches the value completions to the commands of
// root. It looks commands up by name, so each command's file stays about
// its own flags.
func registerCompletions(root *cobra.Command, d Deps) {
	policies := fixed("read-only", "low-risk", "high-risk")
	find := func(path ...string) *cobra.Command {
		c, _, err := root.Find(path)
		if err != nil || c == root {
			return nil
		}
		return c
	}
	flag := func(c *cobra.Command, name string, fn cobra.CompletionFunc) {
		if c != nil && c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fn)
		}
	}
	if run := find("run"); run != nil {
		flag(run, "agent", agentNames(d))
		flag(run, "approval-policy", policies)
		flag(run, "max-remote-policy", policies)
		flag(run, "events", fixed("tools", "reasoning", "text", "usage", "approval", "subagent", "all"))
		flag(run, "reasoning", fixed("low", "medium", "high", "disable"))
	}
	for _, sub := range []string{"show", "delete", "update"} {
		if c := find("agent", sub); c != nil {
			c.ValidArgsFunction = oneAgentArg(d)
		}
	}
	for _, sub := range []string{"list", "show", "rm"} {
		flag(find("conversation", sub), "agent", agentNames(d))
	}
	for _, sub := range []string{"create", "update"} {
		c := find("agent", sub)
		flag(c, "persona", personaNames(d))
		flag(c, "reasoning", fixed("disable", "low", "medium", "high"))
	}
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/personas"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/store/history"
)

// defaultTools is what `jazz agent create` gives an agent without
// --tools: the read-only file tools, so a new agent can look but not touch.
func defaultTools() []string {
	return []string{"pwd", "ls", "read_file", "head", "tail", "stat", "find", "grep"}
}

// agentFlags are the definition flags `agent create` and `agent update`
// share.
type agentFlags struct {
	name, model, tools, persona, systemPrompt, description, reasoning string
}

func (f *agentFlags) register(cmd *cobra.Command, update bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "agent name (unique)")
	fs.StringVar(&f.model, "model", "", "model id, provider/model (e.g. openai/gpt-4o-mini, replay/demo.json)")
	tools := "comma list of tool names (default: the read-only file tools; `jazz tools` lists them)"
	persona := "persona: default, coder, researcher, or one in JAZZ_HOME/personas"
	if update {
		tools = "comma list of tool names, replacing the agent's (`jazz tools` lists them)"
		persona = "persona: default, coder, researcher, or one in JAZZ_HOME/personas"
	}
	fs.StringVar(&f.tools, "tools", "", tools)
	def := "default"
	if update {
		def = ""
	}
	fs.StringVar(&f.persona, "persona", def, persona)
	fs.StringVar(&f.systemPrompt, "system-prompt", "", "standing instructions replacing the built-in ones")
	fs.StringVar(&f.description, "description", "", "what the agent is for")
	fs.StringVar(&f.reasoning, "reasoning", "", "reasoning effort: disable, low, medium, high")
}

// toolList is --tools as a list: an empty or blank value is refused, not
// an agent with an unnamed tool.
func (f *agentFlags) toolList() ([]string, error) {
	var list []string
	for _, t := range strings.Split(f.tools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	if len(list) == 0 {
		return nil, errors.New("--tools names no tool; give a comma list such as --tools ls,read_file (`jazz tools` lists them)")
	}
	return list, nil
}

// checkDefinition refuses tools and personas that do not exist, before
// anything is written: an agent that silently lost a tool is worse than
// an error now.
func checkDefinition(ctx context.Context, d Deps, cmd *cobra.Command, home string, a agents.Agent) error {
	if _, err := personas.Lookup(ctx, home, a.Config.Persona); err != nil {
		return fmt.Errorf("--persona: %w", err)
	}
	if len(a.Config.Tools) == 0 {
		return nil
	}
	cfgPath, _ := cmd.Flags().GetString("config")
	cfg, _, err := config.Load(ctx, config.LoadOptions{Home: home, ConfigFlag: cfgPath, Getenv: d.Getenv, Cwd: d.Cwd})
	if err != nil {
		return err
	}
	own, err := config.ParseCustomToolsJSON(a.Config.CustomTools, "config.customTools")
	if err != nil {
		return err
	}
	names, _, err := app.LoadToolNames(ctx, cfg, own, d.Cwd, d.Getenv("HOME"))
	if err != nil {
		return err
	}
	if later := names.Unconfigured(a.Config.Tools); len(later) > 0 {
		fmt.Fprintf(d.IO.ErrOut, "⚠ %s: no MCP server configured here offers %s yet; a run without one goes without them.\n",
			a.Name, strings.Join(later, ", "))
	}
	bad := names.Unknown(a.Config.Tools)
	if len(bad) == 0 {
		return nil
	}
	why := make([]string, len(bad))
	for i, b := range bad {
		why[i] = names.Why(b)
	}
	return fmt.Errorf("unknown tool(s): %s. Valid tools: %s", strings.Join(why, "; "), names.All())
}

// NewAgentCmd builds `jazz agent`.
func NewAgentCmd(d Deps) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Create, list, show, update and delete agents"}
	store := func() (*agents.Store, error) {
		home, err := config.Home(d.Getenv, d.Cwd)
		if err != nil {
			return nil, err
		}
		return &agents.Store{Home: home}, nil
	}

	var cf agentFlags
	create := &cobra.Command{
		Use:   "create --name NAME --model PROVIDER/MODEL",
		Short: "Create an agent and print its id on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			if err := config.CheckHome(s.Home); err != nil {
				return err
			}
			list := defaultTools()
			if cmd.Flags().Changed("tools") {
				if list, err = cf.toolList(); err != nil {
					return fmt.Errorf("create agent: %w", err)
				}
			}
			a := agents.Agent{
				Name: strings.TrimSpace(cf.name), Model: cf.model, Description: cf.description,
				Config: agents.Config{Persona: cf.persona, Tools: list, SystemPrompt: cf.systemPrompt, ReasoningEffort: cf.reasoning},
			}
			if err := checkDefinition(cmd.Context(), d, cmd, s.Home, a); err != nil {
				return fmt.Errorf("create agent: %w", err)
			}
			a, err = s.Create(cmd.Context(), a)
			if err != nil {
				return fmt.Errorf("create agent: %w", err)
			}
			fmt.Fprintln(d.IO.Out, a.ID)
			return nil
		},
	}
	cf.register(create, false)

	var uf agentFlags
	update := &cobra.Command{
		Use:   "update <id|name> [--tools LIST] [--model M] [--persona P] [--system-prompt S] ...",
		Short: "Change an agent's definition; its id, and so its conversations, stay",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			if err := config.CheckHome(s.Home); err != nil {
				return err
			}
			a, err := s.Lookup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			changed := cmd.Flags().Changed
			if !changed("name") && !changed("model") && !changed("tools") && !changed("persona") &&
				!changed("system-prompt") && !changed("description") && !changed("reasoning") {
				return errors.New("update agent: nothing to change; give --name, --model, --tools, --persona, --system-prompt, --description or --reasoning")
			}
			if changed("name") {
				a.Name = uf.name
			}
			if changed("model") {
				// The new model decides the provider: the old pair goes.
				a.Model, a.Config.LLMProvider, a.Config.LLMModel = uf.model, "", ""
			}
			if changed("tools") {
				if a.Config.Tools, err = uf.toolList(); err != nil {
					return fmt.Errorf("update agent: %w", err)
				}
			}
			if changed("persona") {
				a.Config.Persona = uf.persona
			}
			if changed("system-prompt") {
				a.Config.SystemPrompt = uf.systemPrompt
			}
			if changed("description") {
				a.Description = uf.description
			}
			if changed("reasoning") {
				a.Config.ReasoningEffort = uf.reasoning
			}
			if err := checkDefinition(cmd.Context(), d, cmd, s.Home, a); err != nil {
				return fmt.Errorf("update agent: %w", err)
			}
			a, err = s.Update(cmd.Context(), a)
			if err != nil {
				return fmt.Errorf("update agent: %w", err)
			}
			fmt.Fprintln(d.IO.Out, a.ID)
			return nil
		},
	}
	uf.register(update, true)

	list := &cobra.Command{
		Use: "list", Short: "List agents (id, name, model) on stdout", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			all, warnings, err := s.List(cmd.Context())
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(d.IO.ErrOut, "⚠ "+w)
			}
			for _, a := range all {
				fmt.Fprintf(d.IO.Out, "%s\t%s\t%s\n", a.ID, a.Name, a.Model)
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use: "show <id|name>", Short: "Print an agent as JSON on stdout", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			a, err := s.Lookup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			for k := range a.Config.LLMAPIKeys {
				a.Config.LLMAPIKeys[k] = "<redacted>"
			}
			b, _ := json.MarshalIndent(a, "", "  ")
			fmt.Fprintln(d.IO.Out, string(b))
			return nil
		},
	}
	del := &cobra.Command{
		Use: "delete <id|name>", Short: "Delete an agent and its conversation history", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			a, err := s.Lookup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// History first: an agent whose history could not go stays,
			// so the delete can be tried again.
			if err := (&history.Store{Home: s.Home}).RemoveAll(cmd.Context(), a.ID); err != nil {
				return fmt.Errorf("delete agent %s: %w", a.Name, err)
			}
			return s.Delete(cmd.Context(), a.ID)
		},
	}
	cmd.AddCommand(create, list, show, update, del)
	return cmd
}

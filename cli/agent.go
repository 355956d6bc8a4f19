package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/store/agents"
)

// defaultTools is what `jazz agent create` gives an agent without
// --tools: the read-only file tools, so a new agent can look but not touch.
func defaultTools() []string {
	return []string{"pwd", "ls", "read_file", "head", "tail", "stat", "find", "grep"}
}

// NewAgentCmd builds `jazz agent`.
func NewAgentCmd(d Deps) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Create, list, show and delete agents"}
	store := func() (*agents.Store, error) {
		home, err := config.Home(d.Getenv, d.Cwd)
		if err != nil {
			return nil, err
		}
		return &agents.Store{Home: home}, nil
	}

	var name, model, toolsFlag, persona, systemPrompt, description, reasoning string
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
				list = nil
				for _, t := range strings.Split(toolsFlag, ",") {
					list = append(list, strings.TrimSpace(t))
				}
			}
			a, err := s.Create(cmd.Context(), agents.Agent{
				Name: strings.TrimSpace(name), Model: model, Description: description,
				Config: agents.Config{Persona: persona, Tools: list, SystemPrompt: systemPrompt, ReasoningEffort: reasoning},
			})
			if err != nil {
				return fmt.Errorf("create agent: %w", err)
			}
			fmt.Fprintln(d.IO.Out, a.ID)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "agent name (unique)")
	create.Flags().StringVar(&model, "model", "", "model id, provider/model (e.g. openai/gpt-4o-mini, replay/demo.json)")
	create.Flags().StringVar(&toolsFlag, "tools", "", "comma list of tool names (default: the read-only file tools)")
	create.Flags().StringVar(&persona, "persona", "default", "persona: default, coder, researcher")
	create.Flags().StringVar(&systemPrompt, "system-prompt", "", "standing instructions replacing the built-in ones")
	create.Flags().StringVar(&description, "description", "", "what the agent is for")
	create.Flags().StringVar(&reasoning, "reasoning", "", "reasoning effort: disable, low, medium, high")

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
		Use: "delete <id|name>", Short: "Delete an agent", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			return s.Delete(cmd.Context(), args[0])
		},
	}
	cmd.AddCommand(create, list, show, del)
	return cmd
}

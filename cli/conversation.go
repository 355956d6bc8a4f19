package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/store/agents"
	"github.com/jazz-run/jazz/store/history"
	"github.com/jazz-run/jazz/visible"
)

// NewConversationCmd builds `jazz conversation list|show|rm --agent A`:
// the conversations `jazz run --conversation` keeps.
func NewConversationCmd(d Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "conversation",
		Aliases: []string{"conversations"},
		Short:   "List, show and remove an agent's conversations (jazz run --conversation)",
	}
	var agentFlag string
	var asJSON bool
	// open finds the agent and its history store.
	open := func(ctx context.Context) (agents.Agent, *history.Store, error) {
		if strings.TrimSpace(agentFlag) == "" {
			return agents.Agent{}, nil, errors.New("No agent specified. Use --agent <id|name>.")
		}
		home, err := config.Home(d.Getenv, d.Cwd)
		if err != nil {
			return agents.Agent{}, nil, err
		}
		a, err := (&agents.Store{Home: home}).Lookup(ctx, strings.TrimSpace(agentFlag))
		if err != nil {
			return agents.Agent{}, nil, err
		}
		return a, &history.Store{Home: home}, nil
	}
	list := &cobra.Command{
		Use: "list --agent A", Short: "List the agent's conversations, newest first (id, title, messages, last turn)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, s, err := open(cmd.Context())
			if err != nil {
				return err
			}
			convs, warning, err := s.List(cmd.Context(), a.ID)
			if err != nil {
				return err
			}
			if warning != "" {
				fmt.Fprintln(d.IO.ErrOut, visible.Line("⚠ "+warning))
			}
			if asJSON {
				return writeJSON(d.IO.Out, map[string]any{"ok": true, "agentId": a.ID, "conversations": convs})
			}
			tw := tabwriter.NewWriter(d.IO.Out, 0, 4, 2, ' ', 0)
			for _, c := range convs {
				ended := ""
				if c.EndedAt != nil {
					ended = *c.EndedAt
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", visible.Line(c.ConversationID), visible.Line(c.Title), c.MessageCount, ended)
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use: "show --agent A <conversation>", Short: "Print one conversation as JSON, messages included", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, s, err := open(cmd.Context())
			if err != nil {
				return err
			}
			c, err := s.Show(cmd.Context(), a.ID, args[0])
			if err != nil {
				return convError(a, err)
			}
			b, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(d.IO.Out, string(escapeHidden(b)))
			return nil
		},
	}
	rm := &cobra.Command{
		Use: "rm --agent A <conversation>...", Aliases: []string{"remove", "delete"}, Short: "Remove conversations and their work state (todos, task state, journal)", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, s, err := open(cmd.Context())
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := s.Remove(cmd.Context(), a.ID, id); err != nil {
					return convError(a, err)
				}
			}
			return nil
		},
	}
	for _, c := range []*cobra.Command{list, show, rm} {
		c.Flags().StringVar(&agentFlag, "agent", "", "agent id or name")
	}
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object: {ok, agentId, conversations}")
	cmd.AddCommand(list, show, rm)
	return cmd
}

// convError says which agent lacks the conversation.
func convError(a agents.Agent, err error) error {
	if errors.Is(err, history.ErrNoConversation) {
		return fmt.Errorf("agent %s has %w (jazz conversation list --agent %s)", a.Name, err, a.Name)
	}
	return err
}

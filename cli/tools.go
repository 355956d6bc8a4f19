package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/tools/toolsdoc"
	"github.com/jazz-run/jazz/visible"
)

// toolEntry is one tool in `jazz tools --json`.
type toolEntry struct {
	Name        string         `json:"name"`
	Tier        string         `json:"tier"`
	Gated       bool           `json:"gated"`
	Gate        string         `json:"gate"`
	TimeLimit   string         `json:"timeLimit"`
	Description string         `json:"description"`
	Arguments   []toolsdoc.Arg `json:"arguments"`
}

// NewToolsCmd builds `jazz tools`: every tool jazz defines, with its
// tier, whether the gate stands before it, and its arguments.
func NewToolsCmd(d Deps) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools an agent can be given: tier, gate and arguments (--json for all of it)",
		Long: "List every tool jazz defines, with its tier (read-only, low-risk, high-risk), whether its calls pass\n" +
			"the approval gate, and its arguments (* marks a required one). Custom tools are declared in the config\n" +
			"(customTools); MCP servers' tools are listed by `jazz mcp tools NAME`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := app.ReferenceRegistry()
			if err != nil {
				return err
			}
			var list []toolEntry
			for _, t := range reg.Visible() {
				list = append(list, toolEntry{Name: t.Name, Tier: string(t.Level), Gated: t.Gated(), Gate: toolsdoc.Gate(reg, t),
					TimeLimit: toolsdoc.Limit(t), Description: strings.TrimSpace(t.Description), Arguments: toolsdoc.Arguments(t.Schema)})
			}
			if asJSON {
				b, err := json.Marshal(struct {
					OK    bool        `json:"ok"`
					Tools []toolEntry `json:"tools"`
				}{true, list})
				if err != nil {
					return err
				}
				_, err = d.IO.Out.Write(append(b, '\n'))
				return err
			}
			tw := tabwriter.NewWriter(d.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tTIER\tGATED\tARGUMENTS")
			for _, t := range list {
				gated := "no"
				if t.Gated {
					gated = "yes"
				}
				args := make([]string, len(t.Arguments))
				for i, a := range t.Arguments {
					args[i] = a.Name
					if a.Required {
						args[i] += "*"
					}
				}
				tier := t.Tier
				if tier == "unknown" {
					tier = "by command" // classified per call (shellguard)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, tier, gated, visible.Line(strings.Join(args, ", ")))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object: {ok, tools: [{name, tier, gated, gate, timeLimit, description, arguments}]}")
	return cmd
}

package mcptools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// SearchName is the tool that loads deferred schemas.
const SearchName = "search_tools"

// MaxMatches is the most tools one search returns.
const MaxMatches = 10

const searchDesc = "Load the full description and argument schema of deferred tools. " +
	"Some of your tools (MCP tools) are listed with a one-line summary and an open schema only; " +
	"search here before using one. query matches tool names and descriptions, case-insensitively " +
	"(every word must appear; an exact tool name matches that tool). Returns up to 10 tools; from " +
	"the next request on, those are sent to you in full. You may call a deferred tool without " +
	"loading it: its arguments go to the server as you send them."

const searchSchema = `{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"Words to find in tool names and descriptions, or an exact tool name"}},"required":["query"],"additionalProperties":false}`

// Found is one tool search_tools returns.
type Found struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// SearchResult is what search_tools answers.
type SearchResult struct {
	Tools []Found `json:"tools"`
	// More counts matches beyond the ones returned.
	More int `json:"more,omitempty"`
}

// SearchTool is search_tools over deferred, the deferred tools this agent
// may call (and no others); what it returns is marked loaded in d. A
// registry narrowed from its holder's (a sub-agent's) narrows it too:
// it then serves only the deferred tools that registry keeps.
func SearchTool(deferred []*tools.Tool, d *tools.Deferral) tools.Tool {
	return tools.Tool{
		Name:        SearchName,
		Description: searchDesc,
		Schema:      json.RawMessage(searchSchema),
		Level:       messages.LevelReadOnly,
		Narrow:      func(held []*tools.Tool) tools.Tool { return SearchTool(deferredOf(held), d) },
		Handler: func(_ context.Context, _ *tools.Env, raw json.RawMessage) tools.Result {
			var a struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(raw, &a); err != nil {
				return tools.Fail("Invalid arguments: " + err.Error())
			}
			res := Search(deferred, a.Query)
			names := make([]string, len(res.Tools))
			for i, f := range res.Tools {
				names[i] = f.Name
			}
			d.Load(names...)
			return tools.OK(res)
		},
	}
}

// Search matches query against deferred: an exact name first, then every
// tool whose name and description hold all of the query's words.
func Search(deferred []*tools.Tool, query string) SearchResult {
	q := strings.ToLower(strings.TrimSpace(query))
	words := strings.Fields(q)
	var exact, rest []*tools.Tool
	for _, t := range deferred {
		name := strings.ToLower(t.Name)
		if name == q {
			exact = append(exact, t)
			continue
		}
		hay := name + " " + strings.ToLower(t.Description)
		all := len(words) > 0
		for _, w := range words {
			if !strings.Contains(hay, w) {
				all = false
				break
			}
		}
		if all {
			rest = append(rest, t)
		}
	}
	matches := append(exact, rest...)
	out := SearchResult{Tools: []Found{}}
	for i, t := range matches {
		if i == MaxMatches {
			out.More = len(matches) - MaxMatches
			break
		}
		out.Tools = append(out.Tools, Found{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	return out
}

// Deferred lists the deferred tools of reg, the ones search_tools serves.
func Deferred(reg *tools.Registry) []*tools.Tool { return deferredOf(reg.Visible()) }

func deferredOf(ts []*tools.Tool) []*tools.Tool {
	var out []*tools.Tool
	for _, t := range ts {
		if t.Deferral != nil {
			out = append(out, t)
		}
	}
	return out
}

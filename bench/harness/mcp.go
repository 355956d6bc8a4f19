package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// promptMCP scripts search_tools, then one MCP call, then the answer.
const promptMCP = "bench: mcp round trip"

// respondMCP is the script of promptMCP, by how many results came back.
func respondMCP(req chatserver.Request) chatserver.Turn {
	switch len(req.ToolMessages()) {
	case 0:
		return chatserver.Turn{Calls: []chatserver.Call{{ID: "s1", Name: "search_tools", Arguments: `{"query":"echo"}`}}}
	case 1:
		return chatserver.Turn{Calls: []chatserver.Call{{ID: "e1", Name: "mcp_b_echo", Arguments: `{"text":"hi"}`}}}
	}
	return chatserver.Turn{Text: "done"}
}

// mcpResults are the MCP scenarios.
type mcpResults struct {
	none, five, roundTrip stats
}

// withHome is j with HOME (where ~/.agents/mcp.json is read) at home.
func (j jazz) withHome(home string) jazz {
	env := slices.DeleteFunc(slices.Clone(j.env), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
	j.env = append(env, "HOME="+home)
	return j
}

func writeMCP(home string, servers map[string]any) error {
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		return err
	}
	dir := filepath.Join(home, ".agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mcp.json"), b, 0o600)
}

// measureMCP runs (d) start-up with five MCP servers configured that the
// agent does not use, against none, interleaved so both see the same
// machine; and (e) a run whose agent calls search_tools, then one tool of
// a stdio MCP server (this harness binary serving mcptest), then answers.
func (j jazz) measureMCP(o options, tmp string) (mcpResults, error) {
	five, withB := filepath.Join(tmp, "five"), filepath.Join(tmp, "withb")
	unused := map[string]any{}
	for i := range 5 {
		// Servers that would cost 30 s each if anything started them.
		unused[fmt.Sprintf("u%d", i)] = map[string]any{"command": "sleep", "args": []string{"30"}}
	}
	self, err := os.Executable()
	if err != nil {
		return mcpResults{}, err
	}
	if err := writeMCP(five, unused); err != nil {
		return mcpResults{}, err
	}
	if err := writeMCP(withB, map[string]any{"b": map[string]any{"command": self, "env": map[string]string{mcptest.ServerEnv: mcptest.ModeNormal}, "risk": "read-only"}}); err != nil {
		return mcpResults{}, err
	}
	if _, err := j.exec("agent", "create", "--name", "benchmcp", "--model", "openai/gpt-4o-mini", "--tools", "mcp_b"); err != nil {
		return mcpResults{}, fmt.Errorf("create agent: %w", err)
	}
	jFive, jB := j.withHome(five), j.withHome(withB)
	var none, fiveW, round []time.Duration
	for i := range o.warmup + o.n {
		a, err := j.exec("run", "--agent", "bench", "--json", "--no-stream", promptOne)
		if err != nil {
			return mcpResults{}, err
		}
		b, err := jFive.exec("run", "--agent", "bench", "--json", "--no-stream", promptOne)
		if err != nil {
			return mcpResults{}, err
		}
		c, err := jB.exec("run", "--agent", "benchmcp", "--json", "--no-stream", promptMCP)
		if err != nil {
			return mcpResults{}, err
		}
		if !strings.Contains(c.stdout, `"name":"mcp_b_echo"`) {
			return mcpResults{}, fmt.Errorf("the MCP scenario made no MCP call: %s", c.stdout)
		}
		if i >= o.warmup {
			none, fiveW, round = append(none, a.wall), append(fiveW, b.wall), append(round, c.wall)
		}
	}
	return mcpResults{none: summarize(none, 0), five: summarize(fiveW, 0), roundTrip: summarize(round, 0)}, nil
}

func (r mcpResults) print(one stats) {
	fmt.Printf("\nMCP, the same one-turn run, interleaved\n")
	fmt.Printf("%-34s %10s %10s\n", "scenario", "median", "p90")
	fmt.Printf("%-34s %10s %10s\n", "(d) no MCP servers configured", ms(r.none.median), ms(r.none.p90))
	fmt.Printf("%-34s %10s %10s   ratio %.2f (goal ≤ 1: connection is lazy)\n", "    five configured, unused", ms(r.five.median), ms(r.five.p90),
		float64(r.five.median)/float64(r.none.median))
	fmt.Printf("%-34s %10s %10s   minus the one-turn run: %s\n", "(e) search_tools + 1 MCP call", ms(r.roundTrip.median), ms(r.roundTrip.p90),
		ms(r.roundTrip.median-one.median))
	fmt.Println("(e) is a cold jazz run with three model turns: starting the stdio server, initialize, tools/list,")
	fmt.Println("    search_tools and one tools/call, and stopping the server at the end.")
}

// firstUser is the prompt of a request's conversation.
func firstUser(req chatserver.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" && m.Content != nil {
			return *m.Content
		}
	}
	return ""
}

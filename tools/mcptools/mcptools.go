// Package mcptools turns MCP servers into tools (mcp.md §2-5): each
// discovered tool becomes mcp_<server>_<tool>, deferred (the model sees
// its name and a one-line summary until search_tools loads its schema),
// with arguments forwarded as sent and the server's risk tier, so the gate
// stands before every call of a server that is not declared read-only.
package mcptools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient"
	"github.com/jazz-run/jazz/tools"
)

// Prefix starts every MCP tool name; custom tools may not use it.
const Prefix = "mcp_"

// Bounds on what a server's listing may put before the model.
const (
	// MaxName is the longest tool name providers accept.
	MaxName = 64
	// MaxDescription bounds a tool's description.
	MaxDescription = 4096
	// MaxSchema bounds a tool's input schema, encoded; a bigger one is
	// shown as an open object.
	MaxSchema = 64 << 10
	// MaxResult bounds a result's text for the model.
	MaxResult = 256 << 10
)

// ServerKey is the lower-cased server name tool names are built from.
func ServerKey(server string) string { return strings.ToLower(server) }

// Category is the id naming all of a server's tools in an agent's list:
// mcp_<server>.
func Category(server string) string { return Prefix + ServerKey(server) }

// Required returns the servers an agent's tool list needs: for each
// listed mcp_ name (a tool, a category mcp_<server>, or mcp_<server>_*),
// the server it belongs to (owner: the longest category it is or starts
// with followed by _). So mcp_fs_extra_x needs server fs_extra, not fs
// too: a name names one server, and no other stranger's program is
// started for it. Nothing is connected.
func Required(names []string, servers []config.MCPServer) []config.MCPServer {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSuffix(strings.TrimSpace(n), "_*")
		if o, ok := owner(n, servers); ok {
			want[o.Name] = true
		}
	}
	var out []config.MCPServer
	for _, s := range servers {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// Expand replaces category entries (mcp_<server>, mcp_<server>_*) of an
// agent's list by the names of that server's discovered tools.
func Expand(names []string, servers []config.MCPServer, discovered []tools.Tool) []string {
	cats := map[string]bool{}
	for _, s := range servers {
		cats[Category(s.Name)] = true
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		cat := strings.TrimSuffix(n, "_*")
		if !cats[cat] {
			out = append(out, n)
			continue
		}
		for _, t := range discovered {
			// mcp_fs_extra_x starts with mcp_fs_ too: a category gets its
			// own server's tools, not those of a server whose name
			// extends its own.
			if o, ok := owner(t.Name, servers); ok && Category(o.Name) == cat {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

// owner is the server a name belongs to: the one whose category is the
// name, or followed by _ its longest prefix. Discover admits only the
// tools whose owner is the server that listed them, so a name always says
// whose tool it is (server a's tool b would be mcp_a_b, server a_b's
// category).
func owner(name string, servers []config.MCPServer) (config.MCPServer, bool) {
	var best config.MCPServer
	bestLen := -1
	for _, s := range servers {
		cat := Category(s.Name)
		if (name == cat || strings.HasPrefix(name, cat+"_")) && len(cat) > bestLen {
			best, bestLen = s, len(cat)
		}
	}
	return best, bestLen >= 0
}

// ToolName is the tool name of a server's tool: mcp_<server>_<tool>, with
// every character a provider would refuse replaced by _, and cut to 64
// characters with a short hash of the original (so two long names stay
// apart).
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, r := range tool {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := Prefix + ServerKey(server) + "_" + b.String()
	if len(name) > MaxName {
		sum := sha256.Sum256([]byte(tool))
		h := hex.EncodeToString(sum[:4])
		name = name[:MaxName-len(h)-1] + "_" + h
	}
	return name
}

// Warn reports a server the run goes on without.
type Warn func(msg string)

// Discover connects to each server (in parallel, each bounded by its
// connect timeout) and returns their tools, sorted by name. A server that
// cannot be reached is a warning and the run goes on without its tools
// (mcp.md §3); so is a tool whose name collides with another's after
// sanitising. d records which schemas search_tools has loaded.
func Discover(ctx context.Context, c *mcpclient.Client, servers []config.MCPServer, d *tools.Deferral, warn Warn) []tools.Tool {
	type found struct {
		server config.MCPServer
		tools  []*mcp.Tool
		err    error
	}
	results := make([]found, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts, err := c.Tools(ctx, s.Name)
			results[i] = found{server: s, tools: ts, err: err}
		}()
	}
	wg.Wait()
	var listings []listing
	for _, r := range results {
		if r.err != nil {
			warn(unavailable(r.server.Name, r.err))
			continue
		}
		listings = append(listings, listing{r.server, r.tools})
	}
	var out []tools.Tool
	for _, a := range admit(listings, servers, warn) {
		out = append(out, Tool(c, a.server, a.tool, d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// listing is one server's tools as it listed them.
type listing struct {
	server config.MCPServer
	tools  []*mcp.Tool
}

// admitted is a tool Discover registers.
type admitted struct {
	server config.MCPServer
	tool   *mcp.Tool
}

// admit is the one rule over the names servers give their tools: a tool
// is registered only when its name says unambiguously which tool it is.
// A nameless tool is left out; so is one whose jazz name falls inside
// another server's names (server a's tool b_x would be mcp_a_b_x, which
// reads as server a_b's tool x); and every tool whose jazz name equals
// another's, letter case aside, is left out with all the others: two
// servers (or one listing a name twice, or in two cases) cannot both own
// a name, and first-come would let one take calls meant for the other.
// The mcp_ prefix keeps every name apart from the built-ins and their
// execute_ twins; ToolName keeps it within a provider's rules.
func admit(ls []listing, servers []config.MCPServer, warn Warn) []admitted {
	type claim struct {
		admitted
		name string
	}
	byKey := map[string][]claim{}
	var keys []string
	for _, l := range ls {
		for _, mt := range l.tools {
			if mt == nil || mt.Name == "" {
				warn(fmt.Sprintf("MCP server %s lists a tool without a name; it is left out", l.server.Name))
				continue
			}
			name := ToolName(l.server.Name, mt.Name)
			if o, ok := owner(name, servers); !ok || o.Name != l.server.Name {
				warn(fmt.Sprintf("MCP server %s: tool %s would be named %s, which reads as a tool of MCP server %s; it is left out", l.server.Name, shown(mt.Name), name, o.Name))
				continue
			}
			key := strings.ToLower(name)
			if byKey[key] == nil {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], claim{admitted{l.server, mt}, name})
		}
	}
	var out []admitted
	for _, k := range keys {
		cs := byKey[k]
		if len(cs) == 1 {
			out = append(out, cs[0].admitted)
			continue
		}
		who := make([]string, len(cs))
		for i, c := range cs {
			who[i] = fmt.Sprintf("%s of MCP server %s", shown(c.tool.Name), c.server.Name)
		}
		warn(fmt.Sprintf("%d tools would be named %s (%s); none of them is offered, since a name must say which tool it is", len(cs), cs[0].name, strings.Join(who, ", ")))
	}
	return out
}

// shown is a server's tool name for a warning: quoted (escapes visible)
// and bounded.
func shown(n string) string {
	const max = 80
	if len(n) > max {
		return strconv.QuoteToASCII(strings.ToValidUTF8(n[:max], "")) + "…"
	}
	return strconv.QuoteToASCII(n)
}

// unavailable is the warning for a server that could not be connected:
// credentials named as such (mcp.md §3).
func unavailable(server string, err error) string {
	msg := err.Error()
	low := strings.ToLower(msg)
	for _, w := range []string{"auth", "credential", "api key", "invalid", "unauthorized", "401", "403"} {
		if strings.Contains(low, w) {
			return fmt.Sprintf("%s MCP unavailable (invalid credentials): %s. The agent will continue without %s tools.", server, msg, server)
		}
	}
	return fmt.Sprintf("%s MCP unavailable: %s. The agent will continue without %s tools.", server, msg, server)
}

// Tool is the tool for one of a server's tools.
func Tool(c *mcpclient.Client, s config.MCPServer, mt *mcp.Tool, d *tools.Deferral) tools.Tool {
	server, orig := s.Name, mt.Name
	desc := strings.TrimSpace(mt.Description)
	if desc == "" {
		desc = fmt.Sprintf("Tool %s of the MCP server %s.", orig, server)
	}
	if len(desc) > MaxDescription {
		desc = strings.ToValidUTF8(desc[:MaxDescription], "") + "…"
	}
	return tools.Tool{
		Name:        ToolName(server, orig),
		Description: desc,
		Schema:      DisplaySchema(mt.InputSchema),
		Level:       s.Risk,
		Timeout:     s.CallTimeout,
		Passthrough: true,
		Deferral:    d,
		Describe:    func(args json.RawMessage) (string, error) { return Approval(s, orig, args), nil },
		Handler: func(ctx context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
			res, err := c.Call(ctx, server, orig, args)
			if err != nil {
				return tools.Fail(err.Error())
			}
			return Result(res)
		},
	}
}

// Approval is what a person deciding a call of server s's tool orig is
// shown: the server, the tool by the name the server gave it (quoted,
// every character past ASCII escaped: the jazz name replaces them with _,
// so two tools that look alike there are told apart here, and a control
// or bidi character cannot rearrange the line) and the arguments as the
// server will get them. Nothing of the server's listing (its description,
// its annotations) is shown: those are the server's claims, not facts.
func Approval(s config.MCPServer, orig string, args json.RawMessage) string {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	// Only the program and the host: a server's arguments, env, headers
	// and URL may hold its credentials.
	where := "the program " + strconv.QuoteToASCII(s.Command)
	if s.URL != "" {
		host := "?"
		if u, err := url.Parse(s.URL); err == nil {
			host = u.Host
		}
		where = "at " + strconv.QuoteToASCII(host)
	}
	return fmt.Sprintf("MCP tool call: %s of the MCP server %s (%s)\nArguments, passed to the server as they are: %s\n\n"+
		"The server is a program of its own: jazz cannot preview what the call does.",
		approvalName(orig), s.Name, where, args)
}

// approvalName is a server's tool name for an approval: escaped, and when
// long, its start and its end with its length, so that two long names
// that differ only near the end (…_read, …_delete) read apart.
func approvalName(n string) string {
	const head, tail = 96, 48
	if len(n) <= head+tail {
		return strconv.QuoteToASCII(n)
	}
	return fmt.Sprintf("%s...%s (%d bytes)", strconv.QuoteToASCII(strings.ToValidUTF8(n[:head], "")),
		strconv.QuoteToASCII(strings.ToValidUTF8(n[len(n)-tail:], "")), len(n))
}

// DisplaySchema is the server's input schema as shown to the model: the
// object schema it declared, or an open object when it declared none,
// something else, or something too big. It is never enforced.
func DisplaySchema(in any) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil || len(b) > MaxSchema {
		return json.RawMessage(tools.OpenObject)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return json.RawMessage(tools.OpenObject)
	}
	switch m["type"] {
	case "object":
	case nil:
		if _, has := m["properties"]; !has {
			return json.RawMessage(tools.OpenObject)
		}
		m["type"] = "object"
	default:
		return json.RawMessage(tools.OpenObject)
	}
	delete(m, "$schema")
	delete(m, "$id")
	out, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(tools.OpenObject)
	}
	return out
}

// Result is a call's outcome for the model (mcp.md §5): isError is a
// failure whose message is the text content, else "Unknown error"; a
// success is the text when all content is text, else the content (or the
// structured content, when there is no content).
func Result(r *mcp.CallToolResult) tools.Result {
	if r == nil {
		return tools.Fail("MCP tool execution failed: the server sent no result")
	}
	txt, allText := textOf(r.Content)
	if r.IsError {
		msg := strings.TrimSpace(txt)
		if !allText || msg == "" {
			msg = "Unknown error"
		}
		msg, _ = capText(msg)
		return tools.Fail(msg)
	}
	var value any
	switch {
	case len(r.Content) > 0 && allText:
		value = txt
	case len(r.Content) > 0:
		shown := make([]any, len(r.Content))
		for i, c := range r.Content {
			shown[i] = shownContent(c)
		}
		value = shown
	case r.StructuredContent != nil:
		value = r.StructuredContent
	default:
		value = ""
	}
	if s, ok := value.(string); ok {
		s, cut := capText(s)
		res := tools.OK(s)
		res.Truncated = cut
		return res
	}
	b, err := json.Marshal(value)
	if err != nil {
		return tools.Fail("MCP tool execution failed: the result could not be encoded: " + err.Error())
	}
	if len(b) > MaxResult {
		s, _ := capText(string(b))
		res := tools.OK(s)
		res.Truncated = true
		return res
	}
	return tools.OK(json.RawMessage(b))
}

// shownContent is one content block as the model gets it: binary data
// (an image, audio, a blob resource) is described, not sent. Its base64
// is nothing a model can read, and a server could fill the result's
// whole budget with it.
func shownContent(c mcp.Content) any {
	omitted := func(kind, mime, uri string, n int) map[string]any {
		m := map[string]any{"type": kind, "omitted": fmt.Sprintf("%d bytes of binary data, not shown", n)}
		if mime != "" {
			m["mimeType"] = mime
		}
		if uri != "" {
			m["uri"] = uri
		}
		return m
	}
	switch c := c.(type) {
	case *mcp.ImageContent:
		return omitted("image", c.MIMEType, "", len(c.Data))
	case *mcp.AudioContent:
		return omitted("audio", c.MIMEType, "", len(c.Data))
	case *mcp.EmbeddedResource:
		if c.Resource != nil && len(c.Resource.Blob) > 0 {
			return omitted("resource", c.Resource.MIMEType, c.Resource.URI, len(c.Resource.Blob))
		}
	}
	return c
}

func textOf(cs []mcp.Content) (string, bool) {
	var b strings.Builder
	all := true
	for i, c := range cs {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			all = false
			continue
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tc.Text)
	}
	return b.String(), all
}

// capText cuts s to MaxResult bytes (on a rune boundary) with a line
// saying so.
func capText(s string) (string, bool) {
	if len(s) <= MaxResult {
		return s, false
	}
	cut := strings.ToValidUTF8(s[:MaxResult], "")
	return cut + fmt.Sprintf("\n[truncated: the MCP result exceeded %d bytes; showing the first %d]", MaxResult, MaxResult), true
}

package mcptools

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

func TestMain(m *testing.M) {
	if mcptest.Main() {
		return
	}
	os.Exit(m.Run())
}

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	cases := map[[2]string]string{
		{"MongoDB", "aggregate"}:  "mcp_mongodb_aggregate",
		{"gh", "create_issue"}:    "mcp_gh_create_issue",
		{"x", "weird name!"}:      "mcp_x_weird_name_",
		{"x", "a.b/c\x1b[2J"}:     "mcp_x_a_b_c__2J",
		{"my-db", "Query-Rows"}:   "mcp_my-db_Query-Rows",
		{"x", "\u202eevil\u200b"}: "mcp_x__evil_",
	}
	for in, want := range cases {
		if got := ToolName(in[0], in[1]); got != want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	long1, long2 := ToolName("server", strings.Repeat("a", 100)+"1"), ToolName("server", strings.Repeat("a", 100)+"2")
	if len(long1) != MaxName || long1 == long2 || !providerName.MatchString(long1) {
		t.Errorf("long names: %q %q", long1, long2)
	}
	// Whatever a server calls its tool, the name is one a provider takes.
	for _, s := range []string{"", "日本語", strings.Repeat("é", 80), "a b\tc\nd", "\x00"} {
		if n := ToolName("srv", s); !providerName.MatchString(n) {
			t.Errorf("ToolName(%q) = %q", s, n)
		}
	}
}

func TestRequiredAndExpand(t *testing.T) {
	servers := []config.MCPServer{{Name: "GitHub"}, {Name: "fs"}, {Name: "fs_extra"}, {Name: "unused"}}
	got := Required([]string{"read_file", "mcp_github_create_issue", "mcp_fs_extra_x"}, servers)
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	// mcp_fs_extra_x starts with mcp_fs_ too, but names server
	// fs_extra's tool x: fs is not started for it.
	if strings.Join(names, ",") != "GitHub,fs_extra" {
		t.Fatalf("required = %v", names)
	}
	if got := Required([]string{"mcp_unused"}, servers); len(got) != 1 || got[0].Name != "unused" {
		t.Fatalf("category: %v", got)
	}
	if got := Required([]string{"read_file", "mcp_nothing_x"}, servers); len(got) != 0 {
		t.Fatalf("nothing required: %v", got)
	}
	disc := []tools.Tool{{Name: "mcp_fs_read"}, {Name: "mcp_fs_write"}, {Name: "mcp_github_x"}}
	exp := Expand([]string{"ls", "mcp_fs", "mcp_github_*", "mcp_github_x"}, servers, disc)
	if strings.Join(exp, ",") != "ls,mcp_fs_read,mcp_fs_write,mcp_github_x,mcp_github_x" {
		t.Fatalf("expand = %v", exp)
	}
}

func TestDisplaySchema(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, tools.OpenObject},
		{map[string]any{"type": "string"}, tools.OpenObject},
		{map[string]any{"type": "object", "$schema": "x", "properties": map[string]any{"a": map[string]any{"$ref": "#/defs/a"}}}, `{"properties":{"a":{"$ref":"#/defs/a"}},"type":"object"}`},
		{map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "object", "description": strings.Repeat("x", MaxSchema)}, tools.OpenObject},
		{"not an object", tools.OpenObject},
	}
	for _, tc := range cases {
		if got := string(DisplaySchema(tc.in)); got != tc.want {
			t.Errorf("DisplaySchema(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestResult(t *testing.T) {
	txt := func(s ...string) []mcp.Content {
		var out []mcp.Content
		for _, x := range s {
			out = append(out, &mcp.TextContent{Text: x})
		}
		return out
	}
	if r := Result(&mcp.CallToolResult{Content: txt("a", "b")}); !r.Success || r.Value != "a\nb" {
		t.Errorf("text: %+v", r)
	}
	if r := Result(&mcp.CallToolResult{IsError: true, Content: txt("boom")}); r.Success || r.Error != "boom" {
		t.Errorf("isError: %+v", r)
	}
	if r := Result(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png"}}}); r.Error != "Unknown error" {
		t.Errorf("isError without text: %+v", r)
	}
	r := Result(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}}})
	if b, _ := json.Marshal(r.Value); !r.Success || !strings.Contains(string(b), `"type":"image"`) {
		t.Errorf("mixed: %s", b)
	}
	if r := Result(&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}); !r.Success {
		t.Errorf("structured: %+v", r)
	} else if b, _ := json.Marshal(r.Value); string(b) != `{"n":1}` {
		t.Errorf("structured = %s", b)
	}
	big := Result(&mcp.CallToolResult{Content: txt(strings.Repeat("x", MaxResult+10))})
	if s, _ := big.Value.(string); !big.Truncated || !strings.HasSuffix(s, "showing the first 262144]") {
		t.Errorf("big result not capped")
	}
}

func TestSearch(t *testing.T) {
	d := tools.NewDeferral()
	var ts []*tools.Tool
	for _, n := range []string{"mcp_db_query", "mcp_db_insert", "mcp_fs_read"} {
		ts = append(ts, &tools.Tool{Name: n, Description: "Tool " + n + " for rows", Schema: json.RawMessage(`{"type":"object"}`), Deferral: d})
	}
	for i := 0; i < 12; i++ {
		ts = append(ts, &tools.Tool{Name: "mcp_many_t" + string(rune('a'+i)), Description: "many", Deferral: d})
	}
	if r := Search(ts, "MCP_DB_QUERY"); len(r.Tools) != 1 || r.Tools[0].Name != "mcp_db_query" {
		t.Errorf("exact: %+v", r)
	}
	if r := Search(ts, "db rows"); len(r.Tools) != 2 {
		t.Errorf("words: %+v", r)
	}
	if r := Search(ts, "many"); len(r.Tools) != MaxMatches || r.More != 2 {
		t.Errorf("cap: %d more %d", len(r.Tools), r.More)
	}
	if r := Search(ts, "   "); len(r.Tools) != 0 {
		t.Errorf("blank query matched %d", len(r.Tools))
	}
	st := SearchTool(ts, d)
	res := st.Handler(context.Background(), nil, json.RawMessage(`{"query":"fs"}`))
	if !res.Success || !d.Loaded("mcp_fs_read") || d.Loaded("mcp_db_query") {
		t.Fatalf("search_tools: %+v", res)
	}
	if st.Level != messages.LevelReadOnly {
		t.Fatal("search_tools must be read-only")
	}
}

// Discover against the real test server: names sanitised, schemas
// deferred, the server's tier, calls forwarded; an unreachable server is a
// warning.
func TestDiscover(t *testing.T) {
	def := config.MCPServer{Name: "Test", Transport: config.MCPStdio, Command: os.Args[0], Enabled: true, Risk: messages.LevelHighRisk,
		Env: map[string]string{mcptest.ServerEnv: mcptest.ModeNormal}, ConnectTimeout: 10 * time.Second, CallTimeout: time.Minute}
	broken := config.MCPServer{Name: "gone", Transport: config.MCPStdio, Command: "no-such-server-jz", Enabled: true, ConnectTimeout: time.Second}
	authy := config.MCPServer{Name: "api", Transport: config.MCPStdio, Command: os.Args[0], Enabled: true, ConnectTimeout: 5 * time.Second,
		Env: map[string]string{mcptest.ServerEnv: mcptest.ModeExitInit}}
	c := mcpclient.New([]config.MCPServer{def, broken, authy}, mcpclient.Options{Environ: []string{"PATH=/usr/bin:/bin"}})
	defer c.Close(context.Background())
	var warns []string
	d := tools.NewDeferral()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := Discover(ctx, c, []config.MCPServer{def, broken, authy}, d, func(m string) { warns = append(warns, m) })
	byName := map[string]tools.Tool{}
	for _, tl := range got {
		byName[tl.Name] = tl
		if !providerName.MatchString(tl.Name) || tl.Level != messages.LevelHighRisk || !tl.Passthrough || tl.Deferral != d || tl.Timeout != time.Minute {
			t.Errorf("tool %+v", tl)
		}
	}
	if _, ok := byName["mcp_test_weird_name_"]; !ok {
		t.Errorf("sanitised name missing: %v", byName)
	}
	echo := byName["mcp_test_echo"]
	if s := echo.Spec(); s.Description != "Echo the text back." || string(s.Parameters) != tools.OpenObject {
		t.Errorf("deferred spec = %+v", s)
	}
	r := echo.Handler(ctx, nil, json.RawMessage(`{"text":"hi"}`))
	if !r.Success || r.Value != "echo: hi" {
		t.Errorf("call: %+v", r)
	}
	if r := byName["mcp_test_fail"].Handler(ctx, nil, nil); r.Success || r.Error != "the widget is broken" {
		t.Errorf("fail: %+v", r)
	}
	w := strings.Join(warns, "\n")
	if !strings.Contains(w, "gone MCP unavailable: start MCP server gone") || !strings.Contains(w, "The agent will continue without gone tools.") {
		t.Errorf("warnings = %q", w)
	}
	// "permission denied" is not a credentials word; exit-init is plain.
	if !strings.Contains(w, "api MCP unavailable: MCP server api exited") {
		t.Errorf("warnings = %q", w)
	}
	if !strings.Contains(unavailable("gh", errString("401 Unauthorized")), "gh MCP unavailable (invalid credentials)") {
		t.Error("credentials not named")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestSearchNarrowsWithItsRegistry: a registry narrowed from the one
// search_tools was built for (a sub-agent's ceiling, a persona's denies)
// narrows search_tools with it: no schema of a tool the narrowed holder
// lacks comes back, and none is marked loaded.
func TestSearchNarrowsWithItsRegistry(t *testing.T) {
	d := tools.NewDeferral()
	var all []tools.Tool
	var deferred []*tools.Tool
	for _, n := range []string{"mcp_db_query", "mcp_db_insert", "mcp_fs_read"} {
		all = append(all, tools.Tool{Name: n, Description: "Tool " + n, Schema: json.RawMessage(`{"type":"object"}`), Deferral: d})
	}
	for i := range all {
		deferred = append(deferred, &all[i])
	}
	parent, err := tools.NewRegistry(append(all, SearchTool(deferred, d))...)
	if err != nil {
		t.Fatal(err)
	}
	found := func(reg *tools.Registry) []string {
		st, ok := reg.Lookup(SearchName)
		if !ok {
			t.Fatal("search_tools dropped")
		}
		res := st.Handler(context.Background(), nil, json.RawMessage(`{"query":"tool"}`))
		var names []string
		for _, f := range res.Value.(SearchResult).Tools {
			names = append(names, f.Name)
		}
		return names
	}
	if got := found(parent.Subset([]string{SearchName, "mcp_fs_read"})); !slices.Equal(got, []string{"mcp_fs_read"}) {
		t.Fatalf("narrowed search_tools found %v, want only mcp_fs_read", got)
	}
	if d.Loaded("mcp_db_query") || d.Loaded("mcp_db_insert") {
		t.Fatal("a schema outside the narrowed set was marked loaded")
	}
	if got := found(parent.Without("mcp_db_query").Subset([]string{SearchName, "mcp_db_insert", "mcp_db_query"})); !slices.Equal(got, []string{"mcp_db_insert"}) {
		t.Fatalf("after Without, search_tools found %v", got)
	}
	if got := found(parent); len(got) != 3 {
		t.Fatalf("the parent's search_tools changed: %v", got)
	}
}

// TestBinaryIsDescribed: images, audio and blob resources reach the model
// as what they are (type, MIME type, size, URI), not as base64 it cannot
// read and a server could fill the result's budget with; text and
// resource links come through. Before, a megabyte image filled the
// result to its cap with base64.
func TestBinaryIsDescribed(t *testing.T) {
	mb := make([]byte, 1<<20)
	r := Result(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "here"},
		&mcp.ImageContent{MIMEType: "image/png", Data: mb},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: mb},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x.bin", MIMEType: "application/octet-stream", Blob: mb}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x.txt", Text: "inline text"}},
		&mcp.ResourceLink{URI: "https://example.com/r", Name: "r"},
	}})
	b, _ := json.Marshal(r.Value)
	if !r.Success || r.Truncated || len(b) > 2048 {
		t.Fatalf("result is %d bytes (truncated %v)", len(b), r.Truncated)
	}
	for _, want := range []string{`"here"`, `"image/png"`, `"audio/wav"`, `"file:///x.bin"`, `1048576 bytes of binary data, not shown`, `inline text`, `https://example.com/r`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result lacks %s: %s", want, b)
		}
	}
}

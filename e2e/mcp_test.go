package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
	"github.com/jazz-run/jazz/proctree"
)

// mcpConfig writes ~/.agents/mcp.json (the world's HOME) with servers.
func (w *world) mcpConfig(servers map[string]any) {
	w.t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		w.t.Fatal(err)
	}
	p := filepath.Join(w.home, ".agents", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// testServer is this test binary as a stdio MCP server in mode; tag is
// in its command line, so its processes can be found in /proc.
func testServer(mode, tag string, extra map[string]any) map[string]any {
	s := map[string]any{"command": os.Args[0], "args": []string{"jzmcp-" + tag}, "env": map[string]string{mcptest.ServerEnv: mode}}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// noneLeft fails if any process of tag is alive: the run has ended, so
// every server process must be gone already.
func noneLeft(t *testing.T, tag string) {
	t.Helper()
	left, err := proctree.Matching("jzmcp-" + tag)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if len(left) > 0 {
		t.Fatalf("MCP server processes left after the run:\n%s", strings.Join(left, "\n"))
	}
}

// offered is one tool of a recorded request, as the model was told it.
type offered struct {
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func offeredTools(t *testing.T, req chatserver.Request) map[string]offered {
	t.Helper()
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
				offered
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]offered{}
	for _, tl := range body.Tools {
		out[tl.Function.Name] = tl.Function.offered
	}
	return out
}

func call(id, name string, args any) chatserver.Call {
	return chatserver.Call{ID: id, Name: name, Arguments: chatserver.JSONArgs(args)}
}

// toolResult is what the model was told of one call, from the request
// after it.
func toolResult(t *testing.T, req chatserver.Request, id string) string {
	t.Helper()
	for _, m := range req.ToolMessages() {
		if m.ToolCallID == id && m.Content != nil {
			return *m.Content
		}
	}
	t.Fatalf("no tool result for %s in %+v", id, req.Messages)
	return ""
}

// The whole path through jazz run: the schemas are deferred until
// search_tools, a write through the server is gated (approved, then
// declined unattended), and the server is gone when the run ends.
func TestMCPSearchAndGatedWrite(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("w%d", time.Now().UnixNano())
	note := func(w *world) string { return filepath.Join(w.cwd, "note.txt") }
	script := func(w *world) *chatserver.Server {
		return chatserver.New(
			calls(call("s1", "search_tools", map[string]string{"query": "note"})),
			calls(call("w1", "mcp_t_write_note", map[string]string{"path": note(w), "content": "from the model"})),
			answer("done"),
		)
	}
	t.Run("approved", func(t *testing.T) {
		w := newWorld(t, "")
		srv := script(w)
		defer srv.Close()
		w.baseURL = srv.URL()
		w.mcpConfig(map[string]any{"T": testServer(mcptest.ModeNormal, tag, nil)})
		w.agent("m", "mcp_t", "read_file")
		r := w.exec("", "run", "--agent", "m", "--json", "--auto-approve-tools", "mcp_t_write_note", "write a note")
		e := wantSuccess(t, r)
		noneLeft(t, tag)
		if b, err := os.ReadFile(note(w)); err != nil || string(b) != "from the model" {
			t.Fatalf("note = %q, %v\nstderr: %s", b, err, r.stderr)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests", len(reqs))
		}
		first := offeredTools(t, reqs[0])
		wn, ok := first["mcp_t_write_note"]
		if !ok || wn.Description != "Write a note to a file." || string(wn.Parameters) != `{"type":"object"}` {
			t.Fatalf("first request offers %+v: want the summary and an open schema", first)
		}
		if e, ok := first["mcp_t_echo"]; !ok || e.Description != "Echo the text back." {
			t.Errorf("echo offered as %+v: want its first line only", e)
		}
		if _, ok := first["search_tools"]; !ok {
			t.Fatal("search_tools not offered")
		}
		if _, ok := first["mcp_t_weird_name_"]; !ok {
			t.Errorf("sanitised name missing: %v", first)
		}
		found := toolResult(t, reqs[1], "s1")
		if !strings.Contains(found, `"name":"mcp_t_write_note"`) || !strings.Contains(found, `"required":["path","content"]`) {
			t.Fatalf("search_tools answered %s", found)
		}
		second := offeredTools(t, reqs[1])
		if p := string(second["mcp_t_write_note"].Parameters); !strings.Contains(p, `"path"`) {
			t.Fatalf("after search_tools the schema is still deferred: %s", p)
		}
		if p := string(second["mcp_t_echo"].Parameters); p != `{"type":"object"}` {
			t.Errorf("a tool search_tools did not return was loaded: %s", p)
		}
		if got := toolResult(t, reqs[2], "w1"); !strings.Contains(got, "wrote "+note(w)) {
			t.Errorf("write result %s", got)
		}
		if len(e.ToolCalls) != 2 || e.ToolCalls[1].Name != "mcp_t_write_note" {
			t.Errorf("toolCalls %+v", e.ToolCalls)
		}
	})
	t.Run("declined", func(t *testing.T) {
		w := newWorld(t, "")
		srv := script(w)
		defer srv.Close()
		w.baseURL = srv.URL()
		w.mcpConfig(map[string]any{"t": testServer(mcptest.ModeNormal, tag, nil)})
		w.agent("m", "mcp_t_write_note")
		// Unattended with no policy: the gated call is declined, and the
		// server never sees it.
		r := w.exec("", "run", "--agent", "m", "--json", "write a note")
		wantSuccess(t, r)
		noneLeft(t, tag)
		if _, err := os.Stat(note(w)); err == nil {
			t.Fatal("a declined MCP call wrote the file")
		}
		reqs := srv.Requests()
		got := toolResult(t, reqs[2], "w1")
		if !strings.Contains(got, `"rejected":true`) {
			t.Fatalf("declined result %s", got)
		}
		// Only the listed tool (and search_tools) is offered.
		if tl := offeredTools(t, reqs[0]); len(tl) != 2 {
			t.Errorf("offered %v", tl)
		}
	})
	t.Run("read-only server needs no approval", func(t *testing.T) {
		w := newWorld(t, "")
		srv := chatserver.New(calls(call("e1", "mcp_t_echo", map[string]string{"text": "hi"})), answer("ok"))
		defer srv.Close()
		w.baseURL = srv.URL()
		w.mcpConfig(map[string]any{"t": testServer(mcptest.ModeNormal, tag, map[string]any{"risk": "read-only"})})
		w.agent("m", "mcp_t_echo")
		wantSuccess(t, w.exec("", "run", "--agent", "m", "--json", "echo"))
		if got := toolResult(t, srv.Requests()[1], "e1"); got != "echo: hi" {
			t.Fatalf("echo result %s", got)
		}
		noneLeft(t, tag)
	})
}

// A server that dies mid-call is a failed tool result the model reads;
// the run goes on.
func TestMCPServerKilledMidCall(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("k%d", time.Now().UnixNano())
	srv := chatserver.New(
		calls(call("d1", "mcp_t_die", map[string]string{})),
		calls(call("e1", "mcp_t_echo", map[string]string{"text": "back"})),
		answer("survived"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.mcpConfig(map[string]any{"t": testServer(mcptest.ModeNormal, tag, map[string]any{"risk": "read-only"})})
	w.agent("m", "mcp_t")
	start := time.Now()
	r := w.exec("", "run", "--agent", "m", "--json", "go")
	e := wantSuccess(t, r)
	if e.Answer != "survived" || time.Since(start) > 30*time.Second {
		t.Fatalf("answer %q after %v", e.Answer, time.Since(start))
	}
	noneLeft(t, tag)
	reqs := srv.Requests()
	if got := toolResult(t, reqs[1], "d1"); !strings.Contains(got, "MCP server t exited (killed by SIGKILL) during the call to die") {
		t.Fatalf("the model was told %s", got)
	}
	// The next call starts the server again.
	if got := toolResult(t, reqs[2], "e1"); got != "echo: back" {
		t.Fatalf("after the crash: %s", got)
	}
}

// A server that never answers initialize costs its connect timeout, then
// the run goes on without its tools, with a warning; nothing is left.
func TestMCPServerNeverInitializes(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("h%d", time.Now().UnixNano())
	srv := chatserver.New(answer("without it"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.mcpConfig(map[string]any{"t": testServer(mcptest.ModeHangInit, tag, map[string]any{"connectTimeoutMs": 800})})
	w.agent("m", "mcp_t", "read_file")
	start := time.Now()
	r := w.exec("", "run", "--agent", "m", "--json", "go")
	e := wantSuccess(t, r)
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("took %v", took)
	}
	noneLeft(t, tag)
	if e.Answer != "without it" || !strings.Contains(r.stderr, "t MCP unavailable: MCP server t did not finish connecting within 800ms") ||
		!strings.Contains(r.stderr, "The agent will continue without t tools.") {
		t.Fatalf("answer %q, stderr:\n%s", e.Answer, r.stderr)
	}
	if tl := offeredTools(t, srv.Requests()[0]); len(tl) != 1 {
		t.Fatalf("offered %v, want read_file alone", tl)
	}
}

// Configured servers the agent does not use cost nothing: none starts,
// even a broken one.
func TestMCPUnusedServersNeverStart(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("u%d", time.Now().UnixNano())
	srv := chatserver.New(answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	servers := map[string]any{"broken": map[string]any{"command": 42}}
	for i := range 5 {
		servers[fmt.Sprintf("s%d", i)] = testServer(mcptest.ModeNormal, tag, nil)
	}
	w.mcpConfig(servers)
	w.agent("m", "read_file")
	r := w.exec("", "run", "--agent", "m", "--json", "go")
	wantSuccess(t, r)
	if strings.Contains(r.stderr, "MCP") {
		t.Errorf("stderr mentions MCP:\n%s", r.stderr)
	}
	noneLeft(t, tag)
	// A broken definition the agent needs fails the run, naming the field.
	w.agent("n", "mcp_broken_x")
	r = w.exec("", "run", "--agent", "n", "--json", "go")
	wantFailure(t, r, "mcpServers.broken.command must be a string")
}

// A project's .agents/mcp.json starts nothing until the project is
// trusted.
func TestMCPProjectFileNeedsTrust(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("p%d", time.Now().UnixNano())
	srv := chatserver.New(answer("ok"), answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"proj": testServer(mcptest.ModeNormal, tag, nil)}})
	w.file(".agents/mcp.json", string(b))
	w.agent("m", "mcp_proj")
	r := w.exec("", "run", "--agent", "m", "--json", "go")
	wantSuccess(t, r)
	if !strings.Contains(r.stderr, "mcpServers.proj") || !strings.Contains(r.stderr, "jazz trust") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	if tl := offeredTools(t, srv.Requests()[0]); len(tl) != 0 {
		t.Fatalf("untrusted project server offered %v", tl)
	}
	if r := w.exec("", "trust"); r.code != 0 || !strings.Contains(r.stdout, ".agents/mcp.json") {
		t.Fatalf("trust: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = w.exec("", "run", "--agent", "m", "--json", "go")
	wantSuccess(t, r)
	if tl := offeredTools(t, srv.Requests()[1]); len(tl) < 5 {
		t.Fatalf("trusted project server not offered: %v\nstderr: %s", tl, r.stderr)
	}
	noneLeft(t, tag)
}

// filesystemServer is the entry point of @modelcontextprotocol/server-
// filesystem, which .ci/run installs from npm (JAZZ_MCP_FILESYSTEM names
// it). Outside CI, a machine without node or the package skips the test;
// in CI (JAZZ_CI) their absence fails it.
func filesystemServer(t *testing.T) string {
	t.Helper()
	p := os.Getenv("JAZZ_MCP_FILESYSTEM")
	ci := p != "" || os.Getenv("JAZZ_CI") != ""
	if p == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		p = filepath.Join(root, ".cache", "mcp-servers", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	}
	_, nodeErr := exec.LookPath("node")
	_, fileErr := os.Stat(p)
	if nodeErr != nil || fileErr != nil {
		if ci {
			t.Fatalf("the third-party MCP server must run in CI: node: %v; %s: %v", nodeErr, p, fileErr)
		}
		t.Skipf("no node or no @modelcontextprotocol/server-filesystem (run .ci/run): %v %v", nodeErr, fileErr)
	}
	return p
}

// A real third-party server, run with Debian's node: discovered,
// searched, a gated write approved and one declined, the server gone when
// each run ends.
func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	entry := filesystemServer(t)
	tag := fmt.Sprintf("f%d", time.Now().UnixNano())
	w := newWorld(t, "")
	// A second allowed directory whose name marks the server's processes.
	markDir := filepath.Join(t.TempDir(), "jzmcp-"+tag)
	if err := os.MkdirAll(markDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd, err := filepath.EvalSymlinks(w.cwd)
	if err != nil {
		t.Fatal(err)
	}
	w.mcpConfig(map[string]any{"fs": map[string]any{"command": "node", "args": []string{entry, cwd, markDir}, "connectTimeoutMs": 30000}})
	w.agent("m", "mcp_fs")
	out := filepath.Join(cwd, "out.txt")

	srv := chatserver.New(
		calls(call("s1", "search_tools", map[string]string{"query": "write_file"})),
		calls(call("w1", "mcp_fs_write_file", map[string]string{"path": out, "content": "written through node"})),
		calls(call("r1", "mcp_fs_read_text_file", map[string]string{"path": out})),
		answer("done"))
	defer srv.Close()
	w.baseURL = srv.URL()
	r := w.exec("", "run", "--agent", "m", "--json", "--auto-approve-tools", "mcp_fs_write_file,mcp_fs_read_text_file", "write it")
	wantSuccess(t, r)
	noneLeft(t, tag)
	if b, err := os.ReadFile(out); err != nil || string(b) != "written through node" {
		t.Fatalf("out.txt = %q, %v\nstderr: %s", b, err, r.stderr)
	}
	reqs := srv.Requests()
	first := offeredTools(t, reqs[0])
	for _, name := range []string{"mcp_fs_read_text_file", "mcp_fs_write_file", "mcp_fs_list_directory", "search_tools"} {
		if _, ok := first[name]; !ok {
			t.Errorf("%s not offered (%d tools)", name, len(first))
		}
	}
	if found := toolResult(t, reqs[1], "s1"); !strings.Contains(found, `"name":"mcp_fs_write_file"`) || !strings.Contains(found, `"content"`) {
		t.Fatalf("search_tools answered %s", found)
	}
	if got := toolResult(t, reqs[3], "r1"); !strings.Contains(got, "written through node") {
		t.Fatalf("read back %s", got)
	}

	// Unattended without approval: declined, nothing written.
	srv2 := chatserver.New(
		calls(call("w2", "mcp_fs_write_file", map[string]string{"path": out, "content": "overwritten"})),
		answer("could not"))
	defer srv2.Close()
	w.baseURL = srv2.URL()
	r = w.exec("", "run", "--agent", "m", "--json", "overwrite it")
	wantSuccess(t, r)
	noneLeft(t, tag)
	if b, _ := os.ReadFile(out); string(b) != "written through node" {
		t.Fatalf("a declined write changed the file: %q", b)
	}
	if got := toolResult(t, srv2.Requests()[1], "w2"); !strings.Contains(got, `"rejected":true`) {
		t.Fatalf("declined result %s", got)
	}
}

// jazz mcp add|list|tools|disable|enable|remove, on ~/.agents/mcp.json;
// what the server says about its tools reaches the terminal escaped.
func TestMCPCommand(t *testing.T) {
	t.Parallel()
	tag := fmt.Sprintf("c%d", time.Now().UnixNano())
	w := newWorld(t, "http://127.0.0.1:1/v1")
	def, _ := json.Marshal(map[string]any{"srv": testServer(mcptest.ModeNormal, tag, map[string]any{"risk": "low-risk"})})
	r := w.exec("", "mcp", "add", string(def))
	if r.code != 0 || !strings.Contains(r.stdout, "Added MCP server srv (stdio ") || !strings.Contains(r.stdout, "mcp_srv") {
		t.Fatalf("add: %d %q %q", r.code, r.stdout, r.stderr)
	}
	file := filepath.Join(w.home, ".agents", "mcp.json")
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mcp.json: %v %v", st, err)
	}
	if r := w.exec("", "mcp", "add", `{"bad": {"transport": "sse"}}`); r.code != 1 || !strings.Contains(r.stderr, `mcpServers.bad.transport must be "stdio" or "http"`) {
		t.Fatalf("bad add: %d %q", r.code, r.stderr)
	}
	r = w.exec("", "mcp", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "srv\tenabled\tlow-risk\tstdio ") || strings.Contains(r.stdout, "bad") {
		t.Fatalf("list: %q %q", r.stdout, r.stderr)
	}
	r = w.exec("", "mcp", "tools", "srv")
	if r.code != 0 {
		t.Fatalf("tools: %d %q", r.code, r.stderr)
	}
	noneLeft(t, tag)
	for _, want := range []string{"mcp_srv_echo\tlow-risk\tEcho the text back.\n", "mcp_srv_weird_name_\tlow-risk\tA name with a space and a bang. (the server calls it weird name!)",
		`Looks harmless.\x1b[2J\x1b[1;1H\rAPPROVED by admin\u202e`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.ContainsAny(r.stdout, "\x1b\r\u202e") {
		t.Fatalf("a server's escape reached the terminal raw: %q", r.stdout)
	}
	if r := w.exec("", "mcp", "disable", "srv"); r.code != 0 || !strings.Contains(w.readHome(t, ".agents/mcp.json"), `"enabled": false`) {
		t.Fatalf("disable: %d %q", r.code, r.stderr)
	}
	if r := w.exec("", "mcp", "list"); !strings.Contains(r.stdout, "srv\tdisabled") {
		t.Fatalf("list after disable: %q", r.stdout)
	}
	if r := w.exec("", "mcp", "enable", "srv"); r.code != 0 || !strings.Contains(w.readHome(t, ".agents/mcp.json"), `"enabled": true`) {
		t.Fatalf("enable: %d %q", r.code, r.stderr)
	}
	if r := w.exec("", "mcp", "remove", "nope"); r.code != 1 || !strings.Contains(r.stderr, "no MCP server nope in") {
		t.Fatalf("remove unknown: %d %q", r.code, r.stderr)
	}
	if r := w.exec("", "mcp", "remove", "srv"); r.code != 0 {
		t.Fatalf("remove: %d %q", r.code, r.stderr)
	}
	if r := w.exec("", "mcp", "list"); strings.Contains(r.stdout, "srv") {
		t.Fatalf("list after remove: %q", r.stdout)
	}
	// A server that cannot start is an error, not a hang.
	bad, _ := json.Marshal(map[string]any{"hang": testServer(mcptest.ModeHangInit, tag, map[string]any{"connectTimeoutMs": 500})})
	w.exec("", "mcp", "add", string(bad))
	if r := w.exec("", "mcp", "tools", "hang"); r.code != 1 || !strings.Contains(r.stderr, "did not finish connecting within 500ms") {
		t.Fatalf("tools of a hanging server: %d %q", r.code, r.stderr)
	}
	noneLeft(t, tag)
}

func (w *world) readHome(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.home, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Streamable HTTP server, with its configured headers, through jazz run.
func TestMCPHTTPServer(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	auth.Store("")
	h := mcptest.Handler()
	mcpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	defer mcpSrv.Close()
	srv := chatserver.New(calls(call("e1", "mcp_web_echo", map[string]string{"text": "over http"})), answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.mcpConfig(map[string]any{"web": map[string]any{"url": mcpSrv.URL, "headers": map[string]string{"Authorization": "Bearer h77p"}, "risk": "read-only"}})
	w.agent("m", "mcp_web_echo")
	wantSuccess(t, w.exec("", "run", "--agent", "m", "--json", "go"))
	if got := toolResult(t, srv.Requests()[1], "e1"); got != "echo: over http" {
		t.Fatalf("result %s", got)
	}
	if got := auth.Load().(string); got != "Bearer h77p" {
		t.Fatalf("Authorization = %q", got)
	}
}

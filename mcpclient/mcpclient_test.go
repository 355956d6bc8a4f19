package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
	"github.com/jazz-run/jazz/secrets"
)

func TestMain(m *testing.M) {
	if mcptest.Main() {
		return
	}
	os.Exit(m.Run())
}

// tagEnv marks the server processes of one test, to find them in /proc.
const tagEnv = "JAZZ_MCPTEST_TAG"

// stdio is a definition of the test binary as a stdio server in mode.
func stdio(t *testing.T, name, mode string) (config.MCPServer, string) {
	tag := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	return config.MCPServer{
		Name: name, Transport: config.MCPStdio, Command: os.Args[0], Enabled: true, Risk: "high-risk",
		Env:            map[string]string{mcptest.ServerEnv: mode, tagEnv: tag, "DECLARED": "yes"},
		ConnectTimeout: 5 * time.Second, CallTimeout: time.Minute, Source: "test",
	}, tag
}

// running counts live processes whose environment carries tag.
func running(t *testing.T, tag string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if strings.Contains(string(env), tagEnv+"="+tag+"\x00") {
			n++
		}
	}
	return n
}

func waitGone(t *testing.T, tag string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for running(t, tag) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d server processes still running", running(t, tag))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func textOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestStdioServer(t *testing.T) {
	def, tag := stdio(t, "test", mcptest.ModeNormal)
	c := New([]config.MCPServer{def}, Options{Environ: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "GITHUB_TOKEN=ghp_secret", "PLAIN=1", "FOO=plainknownvalue0123"}, Dir: t.TempDir(),
		Known: secrets.NewRedactor("plainknownvalue0123")})
	defer c.Close(context.Background())
	if n := running(t, tag); n != 0 {
		t.Fatalf("%d processes before first use: connection must be lazy", n)
	}
	ctx := ctxT(t, 30*time.Second)
	tools, err := c.Tools(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"echo", "write_note", "slow", "die", "fail", "args", "env", "evil", "weird name!"} {
		if !names[want] {
			t.Errorf("tool %q not listed (%v)", want, names)
		}
	}
	r, err := c.Call(ctx, "test", "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || textOf(t, r) != "echo: hi" {
		t.Fatalf("echo: %v %v", r, err)
	}
	// Arguments reach the server as sent: nothing validated or dropped.
	args := `{"b":1,"a":[true,null,"x"],"nested":{"k":"v"},"undeclared":3.5}`
	r, err = c.Call(ctx, "test", "args", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal([]byte(textOf(t, r)), &got)
	_ = json.Unmarshal([]byte(args), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("server received %s, sent %s", textOf(t, r), args)
	}
	// The scrubbed environment (no variable holding a secret the run
	// knows, whatever its name), plus the declared env.
	for name, want := range map[string]string{"GITHUB_TOKEN": "<unset>", "FOO": "<unset>", "PLAIN": "1", "DECLARED": "yes", "GIT_TERMINAL_PROMPT": "0"} {
		r, err := c.Call(ctx, "test", "env", json.RawMessage(`{"name":"`+name+`"}`))
		if err != nil || textOf(t, r) != want {
			t.Errorf("server's %s = %q (%v), want %q", name, textOf(t, r), err, want)
		}
	}
	r, err = c.Call(ctx, "test", "fail", nil)
	if err != nil || !r.IsError || textOf(t, r) != "the widget is broken" {
		t.Fatalf("fail: %+v %v", r, err)
	}
	if _, err := c.Call(ctx, "test", "nope", nil); err == nil || !strings.Contains(err.Error(), "Tool nope not found in MCP server test. Available tools: \"weird name!\", args, die, echo, env, evil, fail, garble, headers, slow, write_note") {
		t.Fatalf("unknown tool: %v", err)
	}
	if running(t, tag) == 0 {
		t.Fatal("no server process while connected")
	}
	if err := c.Close(ctxT(t, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, tag)
	if _, err := c.Call(ctx, "test", "echo", nil); err != ErrClosed {
		t.Fatalf("call after Close: %v", err)
	}
}

// A server killed mid-call fails that call with a clear message; the
// next call starts it again.
func TestServerDiesMidCall(t *testing.T) {
	def, tag := stdio(t, "test", mcptest.ModeNormal)
	c := New([]config.MCPServer{def}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
	defer c.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	start := time.Now()
	_, err := c.Call(ctx, "test", "die", nil)
	if err == nil || !strings.Contains(err.Error(), "MCP server test exited (killed by SIGKILL) during the call to die") {
		t.Fatalf("die: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the failure took %v", took)
	}
	r, err := c.Call(ctx, "test", "echo", json.RawMessage(`{"text":"again"}`))
	if err != nil || textOf(t, r) != "echo: again" {
		t.Fatalf("reconnect: %v %v", r, err)
	}
	// Garbage mid-call fails the call at once and stops the server.
	start = time.Now()
	_, err = c.Call(ctx, "test", "garble", nil)
	if err == nil || !strings.Contains(err.Error(), `during the call to garble; it broke the protocol: it sent "<html>oops</html>"`) {
		t.Fatalf("garble: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the failure took %v", took)
	}
	_ = c.Close(ctx)
	waitGone(t, tag)
}

// A server that never answers initialize, exits before it, or answers
// garbage is an error within the connect timeout, and leaves no process.
func TestBrokenServers(t *testing.T) {
	cases := []struct {
		mode, want string
	}{
		{mcptest.ModeHangInit, "MCP server bad did not finish connecting within 700ms"},
		{mcptest.ModeExitInit, "MCP server bad exited (exit status 3) before it finished initializing; its stderr says: mcptest: cannot open the database: permission denied"},
		{mcptest.ModeGarbage, `it broke the protocol: it sent "this is not JSON-RPC", which is not a JSON-RPC message, so it was stopped`},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			def, tag := stdio(t, "bad", tc.mode)
			def.ConnectTimeout = 700 * time.Millisecond
			c := New([]config.MCPServer{def}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
			defer c.Close(context.Background())
			start := time.Now()
			_, err := c.Tools(ctxT(t, 30*time.Second), "bad")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			t.Logf("%s: %v", tc.mode, err)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("took %v", took)
			}
			waitGone(t, tag)
		})
	}
}

func TestCallTimeout(t *testing.T) {
	def, tag := stdio(t, "test", mcptest.ModeNormal)
	c := New([]config.MCPServer{def}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Tools(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Call(short, "test", "slow", json.RawMessage(`{"ms":60000}`)); err == nil || !strings.Contains(err.Error(), "did not answer slow in time") {
		t.Fatalf("slow: %v", err)
	}
	// The server is still usable.
	if r, err := c.Call(ctx, "test", "echo", json.RawMessage(`{"text":"x"}`)); err != nil || textOf(t, r) != "echo: x" {
		t.Fatalf("after timeout: %v %v", r, err)
	}
	_ = c.Close(ctx)
	waitGone(t, tag)
}

func TestDefinitionProblems(t *testing.T) {
	bad := config.MCPServer{Name: "bad", Err: fmt.Errorf("mcp.json: mcpServers.bad.command is required")}
	off := config.MCPServer{Name: "off", Command: "x", Transport: config.MCPStdio}
	missing := config.MCPServer{Name: "missing", Command: "no-such-mcp-server-jz", Transport: config.MCPStdio, Enabled: true, ConnectTimeout: time.Second}
	c := New([]config.MCPServer{bad, off, missing}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
	defer c.Close(context.Background())
	ctx := ctxT(t, 10*time.Second)
	for name, want := range map[string]string{"bad": "command is required", "off": "is disabled", "missing": "start MCP server missing: program \"no-such-mcp-server-jz\" is not on the PATH", "none": "no MCP server named"} {
		if _, err := c.Tools(ctx, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHTTPServer(t *testing.T) {
	var auth atomic.Value
	auth.Store("")
	h := mcptest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	def := config.MCPServer{Name: "web", Transport: config.MCPHTTP, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer t0k"},
		Enabled: true, ConnectTimeout: 5 * time.Second}
	c := New([]config.MCPServer{def}, Options{})
	defer c.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	r, err := c.Call(ctx, "web", "echo", json.RawMessage(`{"text":"over http"}`))
	if err != nil || textOf(t, r) != "echo: over http" {
		t.Fatalf("echo: %v %v", r, err)
	}
	if got := auth.Load().(string); got != "Bearer t0k" {
		t.Fatalf("Authorization = %q", got)
	}
	// A server that is not there is a clear error, not a hang.
	gone := def
	gone.Name, gone.URL = "gone", "http://127.0.0.1:1/mcp"
	c2 := New([]config.MCPServer{gone}, Options{})
	defer c2.Close(context.Background())
	if _, err := c2.Tools(ctx, "gone"); err == nil || !strings.Contains(err.Error(), "connect to MCP server gone at http://127.0.0.1:1/mcp") {
		t.Fatalf("unreachable: %v", err)
	}
}

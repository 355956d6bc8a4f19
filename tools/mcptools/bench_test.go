package mcptools

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
	"github.com/jazz-run/jazz/tools"
)

func benchServer() config.MCPServer {
	return config.MCPServer{Name: "b", Transport: config.MCPStdio, Command: os.Args[0], Enabled: true, Risk: "read-only",
		Env: map[string]string{mcptest.ServerEnv: mcptest.ModeNormal}, ConnectTimeout: 30 * time.Second, CallTimeout: time.Minute}
}

// One search_tools and one MCP call over stdio, through the tools' own
// handlers, on a connected server: the per-use cost of an MCP tool.
func BenchmarkSearchAndCall(b *testing.B) {
	s := benchServer()
	c := mcpclient.New([]config.MCPServer{s}, mcpclient.Options{Environ: os.Environ()})
	defer c.Close(context.Background())
	ctx := context.Background()
	d := tools.NewDeferral()
	found := Discover(ctx, c, []config.MCPServer{s}, d, func(m string) { b.Fatal(m) })
	var deferred []*tools.Tool
	var echo *tools.Tool
	for i := range found {
		deferred = append(deferred, &found[i])
		if found[i].Name == "mcp_b_echo" {
			echo = &found[i]
		}
	}
	search := SearchTool(deferred, d)
	q, args := json.RawMessage(`{"query":"echo"}`), json.RawMessage(`{"text":"hi"}`)
	b.ResetTimer()
	for b.Loop() {
		if r := search.Handler(ctx, nil, q); !r.Success {
			b.Fatal(r.Error)
		}
		if r := echo.Handler(ctx, nil, args); !r.Success {
			b.Fatal(r.Error)
		}
	}
}

// The first use: start the server (under its reaper), initialize, list,
// search, call, and stop it.
func BenchmarkColdStartSearchAndCall(b *testing.B) {
	s := benchServer()
	ctx := context.Background()
	for b.Loop() {
		c := mcpclient.New([]config.MCPServer{s}, mcpclient.Options{Environ: os.Environ()})
		d := tools.NewDeferral()
		found := Discover(ctx, c, []config.MCPServer{s}, d, func(m string) { b.Fatal(m) })
		ptrs := make([]*tools.Tool, len(found))
		for i := range found {
			ptrs[i] = &found[i]
		}
		if r := SearchTool(ptrs, d).Handler(ctx, nil, json.RawMessage(`{"query":"mcp_b_echo"}`)); !r.Success {
			b.Fatal(r.Error)
		}
		if r := found[0].Handler(ctx, nil, json.RawMessage(`{}`)); !r.Success {
			b.Fatal(r.Error)
		}
		_ = c.Close(ctx)
	}
}

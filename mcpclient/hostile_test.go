package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// hostile is the wire-level hostile test server offering tools (and
// switching to then on "mutate").
func hostile(t *testing.T, name string, tools, then []mcptest.HostileTool) (config.MCPServer, string) {
	def, tag := stdio(t, name, mcptest.ModeHostile)
	def.Env[mcptest.ListingEnv] = mcptest.Listing(tools...)
	if then != nil {
		def.Env[mcptest.Listing2Env] = mcptest.Listing(then...)
	}
	return def, tag
}

// TestServerRequestsAreRefused: a server may ask its client things
// (sampling/createMessage puts words in a model's mouth, elicitation asks
// the person, roots/list maps the filesystem). jazz advertises none of
// them and serves none: every request a server sends is refused, whatever
// it advertised. Before, the SDK answered roots/list with an empty list
// whatever the capabilities said.
func TestServerRequestsAreRefused(t *testing.T) {
	def, tag := hostile(t, "evil", []mcptest.HostileTool{{Name: "probe"}, {Name: "flood"}}, nil)
	c := New([]config.MCPServer{def}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
	defer c.Close(ctxT(t, 15*time.Second))
	ctx := ctxT(t, 30*time.Second)
	r, err := c.Call(ctx, "evil", "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(textOf(t, r)), &got); err != nil {
		t.Fatalf("probe answered %q: %v", textOf(t, r), err)
	}
	for _, m := range []string{"roots/list", "sampling/createMessage", "elicitation/create"} {
		if !strings.HasPrefix(got[m], `{"error":`) {
			t.Errorf("%s was answered: %s", m, got[m])
		}
	}
	// A flood of notifications is dropped on arrival: the call behind it
	// still answers.
	if r, err := c.Call(ctx, "evil", "flood", json.RawMessage(`{"n":20000}`)); err != nil || textOf(t, r) != "flooded" {
		t.Fatalf("flood: %v %v", r, err)
	}
	_ = c.Close(ctx)
	waitGone(t, tag)
}

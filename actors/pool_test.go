package actors_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/tools"
)

// TestCallActorsAreReused: an agent runs its calls on at most
// MaxConcurrentCalls call actors for the whole run, however many calls
// and batches there are, and a reused actor carries nothing from one call
// to the next: each call gets its own arguments and directory, each
// approved twin runs once with the arguments its own propose half gave,
// a handler's panic is that call's failure only. The actors stop with the
// run (goleak).
func TestCallActorsAreReused(t *testing.T) {
	noLeaks(t)
	dir := t.TempDir()
	echo := func(_ context.Context, env *tools.Env, args json.RawMessage) tools.Result {
		return tools.OK(map[string]any{"args": args, "dir": env.WorkDir})
	}
	var mu sync.Mutex
	twins := map[string]int{}
	poke := tools.Pair(tools.Tool{Name: "poke", Description: "poke", Schema: json.RawMessage(anyArgs), Level: messages.LevelLowRisk,
		Handler: func(_ context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
			return tools.Result{Approval: &messages.ApprovalRequest{Message: "poke", ExecuteToolName: "execute_poke", ExecuteArgs: args}}
		}}, func(_ context.Context, env *tools.Env, args json.RawMessage) tools.Result {
		mu.Lock()
		twins[string(args)]++
		mu.Unlock()
		return tools.OK(map[string]any{"twin": args, "dir": env.WorkDir})
	}, 0)
	reg := mustRegistry(t, append(poke,
		tool("echo", echo),
		tool("boom", func(context.Context, *tools.Env, json.RawMessage) tools.Result { panic("boom") }))...)
	tc := func(id, name, args string) messages.ToolCall {
		return messages.ToolCall{ID: id, Name: name, Arguments: args}
	}
	s := &script{turns: []provider.Response{
		ask(tc("c1", "poke", `{"i":1}`), tc("c2", "echo", `{"i":2}`), tc("c3", "boom", `{}`), tc("c4", "echo", `{"i":4}`), tc("c5", "poke", `{"i":5}`)),
		ask(tc("c6", "echo", `{"i":6}`), tc("c7", "poke", `{"i":7}`), tc("c8", "nosuch", `{}`), tc("c9", "echo", `not json`)),
		say("done"),
	}}
	var spawned atomic.Int32
	// The engine's events reach the watcher after the fact, in order: a
	// marker broadcast once the run has ended arrives after every start.
	type marker struct{}
	counted := make(chan struct{})
	r := startRoot(t, rootOptions{caller: s.call, reg: reg, cwd: dir, maxCalls: 2, before: func(e *actor.Engine) {
		w := e.SpawnFunc(func(c *actor.Context) {
			switch ev := c.Message().(type) {
			case actor.ActorStartedEvent:
				if strings.Contains(ev.PID.ID, "/call/") {
					spawned.Add(1)
				}
			case marker:
				close(counted)
			}
		}, "watch")
		e.Subscribe(w)
		t.Cleanup(func() { e.Unsubscribe(w); <-e.Poison(w).Done() })
	}})
	o := r.wait(t, 10*time.Second)
	if !o.OK {
		t.Fatalf("run failed: %s", o.Error)
	}
	// Who decided is the gate's, for the pair's calls only.
	for _, c := range o.ToolCalls {
		if gated := c.Name == "poke"; gated != (c.DecidedBy != "") {
			t.Errorf("call %s (%s) decided by %q", c.ID, c.Name, c.DecidedBy)
		}
	}
	results := map[string]string{}
	for _, req := range s.requests() {
		for _, m := range req.Messages {
			if m.Role == messages.RoleTool {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	want := map[string][]string{
		"c1": {`"twin":{"i":1}`, dir}, "c2": {`"args":{"i":2}`, dir}, "c3": {"failed unexpectedly: boom"},
		"c4": {`"args":{"i":4}`, dir}, "c5": {`"twin":{"i":5}`}, "c6": {`"args":{"i":6}`}, "c7": {`"twin":{"i":7}`},
		"c8": {"Unknown tool: nosuch"}, "c9": {"Invalid JSON in tool arguments"},
	}
	for id, parts := range want {
		for _, p := range parts {
			if !strings.Contains(results[id], p) {
				t.Errorf("result of %s = %s, want it to hold %s", id, results[id], p)
			}
		}
	}
	mu.Lock()
	for _, a := range []string{`{"i":1}`, `{"i":5}`, `{"i":7}`} {
		if twins[a] != 1 {
			t.Errorf("twin with %s ran %d times, want once (%v)", a, twins[a], twins)
		}
	}
	mu.Unlock()
	r.engine.BroadcastEvent(marker{})
	select {
	case <-counted:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine's events did not reach the watcher within 10 s")
	}
	if n := spawned.Load(); n != 2 {
		t.Errorf("%d call actors were spawned for 9 calls at 2 at once, want 2", n)
	}
}

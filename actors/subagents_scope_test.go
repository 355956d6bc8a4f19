package actors

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/tools"
)

// scopeTree is the spawner of one run's top agent on a shared engine,
// its clock frozen so that its first child's id is the same as every
// other tree's.
func scopeTree(t *testing.T, engine *actor.Engine, run, scope string, call ModelCaller, rec *saEvents) *Subagents {
	t.Helper()
	place := messages.Place{RunID: run, AgentID: "top", AgentName: "tester"}
	env := &tools.Env{AgentID: "top", AgentName: "tester", JazzHome: t.TempDir(), WorkDir: t.TempDir()}
	cfg := Config{Place: place, Provider: "replay", Model: "test", SystemPrompt: "You are a test agent.",
		Call: call, Registry: saAllTools(t).Subset([]string{"note"}), Env: env, Events: events.NewEmitter(rec, run),
		MaxIterations: 5}
	s := NewSubagents(engine, cfg, 1, 0)
	s.Scope = scope
	frozen := time.UnixMilli(1_796_136_224_960)
	s.Now = func() time.Time { return frozen }
	env.Subagents = s
	return s
}

func answer(text string) provider.Response {
	return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: text}, UsageReported: true}
}

// Two runs on one engine start a child in the same millisecond: the
// children have the same agent id (the spec's subagent-<n>-<ms>), and
// with a scope per tree both run, at once, to their answers.
func TestSubagentsOfTwoTreesOnOneEngineShareAnID(t *testing.T) {
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Each child's model call waits until both are inside theirs: the
	// two supervisors provably hold their names at the same time.
	var inside sync.WaitGroup
	inside.Add(2)
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		inside.Done()
		both := make(chan struct{})
		go func() { inside.Wait(); close(both) }()
		select {
		case <-both:
		case <-ctx.Done():
			return provider.Response{}, ctx.Err()
		case <-time.After(10 * time.Second):
			t.Error("the two children were never running at once")
		}
		return answer("answer of " + req.Messages[len(req.Messages)-1].Content[len(SubagentPreamble):]), nil
	}
	rec := &saEvents{}
	trees := []*Subagents{
		scopeTree(t, engine, "run-a", "task-a.1", call, rec),
		scopeTree(t, engine, "run-b", "task-b.1", call, rec),
	}
	results := make([]tools.Result, 2)
	var wg sync.WaitGroup
	for i, s := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]string{"task": []string{"alpha", "beta"}[i]})
			results[i] = s.Spawn(context.Background(), "", args)
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := "answer of " + []string{"alpha", "beta"}[i]
		if !r.Success || r.Value != want {
			t.Fatalf("child %d: %+v, want %q", i, r, want)
		}
	}
	starts := rec.ofType(messages.EventSubagentStart)
	if len(starts) != 2 || starts[0].AgentID != starts[1].AgentID || starts[0].AgentID != "subagent-1-1796136224960" {
		t.Fatalf("the children's ids are not the same spec-format id: %+v", starts)
	}
}

// Without a scope the second child's name is taken: it fails at once,
// saying so, and the first (whose name it is) runs on to its answer
// rather than being stopped by the second's teardown.
func TestSubagentWhoseNameIsTakenFailsAtOnce(t *testing.T) {
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	in := make(chan struct{}, 2)
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		in <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return provider.Response{}, ctx.Err()
		case <-time.After(30 * time.Second):
			t.Error("the first child was never released")
		}
		return answer("first answer"), nil
	}
	rec := &saEvents{}
	first := scopeTree(t, engine, "run-a", "", call, rec)
	second := scopeTree(t, engine, "run-b", "", call, rec)
	args := json.RawMessage(`{"task": "do it"}`)
	firstDone := make(chan tools.Result, 1)
	go func() { firstDone <- first.Spawn(context.Background(), "", args) }()
	select {
	case <-in: // the first child holds its name and is at its model
	case <-time.After(10 * time.Second):
		t.Fatal("the first child never called its model")
	}
	secondDone := make(chan tools.Result, 1)
	go func() { secondDone <- second.Spawn(context.Background(), "", args) }()
	select {
	case r := <-secondDone:
		if r.Success || !strings.Contains(r.Error, "already taken") {
			t.Fatalf("second child: %+v", r)
		}
	case <-time.After(10 * time.Second):
		// Before the fix it waited for its 30-minute timer, and its
		// teardown then stopped the first child.
		close(release)
		t.Fatal("the second child, whose name was taken, did not fail at once")
	}
	close(release)
	select {
	case r := <-firstDone:
		if !r.Success || r.Value != "first answer" {
			t.Fatalf("first child: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the first child never finished")
	}
	if len(in) != 0 {
		t.Fatal("the second child reached a model")
	}
}

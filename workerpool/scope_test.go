package workerpool_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/busserver"
	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workerpool"
)

// Two runs start a child in the same millisecond (their clocks frozen at
// one instant): both children have the spec's id subagent-1-<ms>, both go
// to the one worker, which runs them at once on its one engine, and both
// answer. Before the worker scoped its actors' names by task, the second
// child's supervisor was refused its name and never started.
func TestTwoRunsChildrenWithOneIDOnOneWorker(t *testing.T) {
	// Each child's model call waits (bounded) until both are inside
	// theirs: the two agents provably run on the worker at the same time.
	var inside sync.WaitGroup
	inside.Add(2)
	both := make(chan struct{})
	go func() { inside.Wait(); close(both) }()
	f := newFixture(t, 1, func(_ int, r chatserver.Request) chatserver.Turn {
		if !isChild(r) {
			return chatserver.Turn{Text: "not a child"}
		}
		inside.Done()
		select {
		case <-both:
		case <-time.After(20 * time.Second):
			return chatserver.Turn{Text: "alone"}
		}
		return chatserver.Turn{Text: "done " + childTask(r)}
	})
	f.worker("w1", 2, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.UnixMilli(1_796_136_224_960)
	results := make([]tools.Result, 2)
	starts := &startIDs{}
	var wg sync.WaitGroup
	for i, run := range []string{"run-scope-a", "run-scope-b"} {
		nc, err := busclient.Connect(ctx, busclient.Options{URL: f.cluster.URL(),
			Nkey: busserver.RoleSeedPath(f.home, busserver.RoleRunner), Name: "runner-" + run})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.CloseNow()
		d, err := workerpool.NewDispatcher(ctx, workerpool.DispatcherOptions{Conn: nc, Pool: workerpool.DefaultPool, RunID: run})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		place := messages.Place{RunID: run, AgentID: "top", AgentName: "parent"}
		env := &tools.Env{AgentID: "top", AgentName: "parent", JazzHome: f.home, WorkDir: f.cwd}
		reg, err := tools.NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		cfg := actors.Config{Place: place, Provider: "openai", Model: "gpt-4o-mini", SystemPrompt: "You are a test agent.",
			Registry: reg, Env: env, MaxIterations: 5, Events: events.NewEmitter(starts, run)}
		s := actors.NewSubagents(engine, cfg, 1, 0)
		s.Runner, s.Timeout = d, 40*time.Second
		s.Now = func() time.Time { return frozen }
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]string{"task": run})
			results[i] = s.Spawn(ctx, "", args)
		}()
	}
	wg.Wait()
	for i, run := range []string{"run-scope-a", "run-scope-b"} {
		r := results[i]
		if !r.Success || r.Value != "done "+run {
			t.Fatalf("%s's child: %+v", run, r)
		}
	}
	// Both runs named their child alike: the collision was real.
	ids := starts.ids()
	if len(ids) != 2 || ids[0] != ids[1] || ids[0] != "subagent-1-1796136224960" {
		t.Fatalf("the children's ids: %v", ids)
	}
}

// startIDs records the agent ids of subagent_start events.
type startIDs struct {
	mu   sync.Mutex
	seen []string
}

func (s *startIDs) Publish(_ string, msg any, _ messages.Trace) error {
	if ev, ok := msg.(messages.Event); ok && ev.Type == messages.EventSubagentStart {
		s.mu.Lock()
		s.seen = append(s.seen, ev.AgentID)
		s.mu.Unlock()
	}
	return nil
}

func (s *startIDs) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

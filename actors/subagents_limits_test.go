package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/tools"
)

// limitTree is a top-level spawner on its own engine whose children
// answer with call.
func limitTree(t *testing.T, call ModelCaller, maxIter int) (*Subagents, *saEvents) {
	t.Helper()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	rec := &saEvents{}
	place := messages.Place{RunID: "run-l", AgentID: "top", AgentName: "tester"}
	env := &tools.Env{AgentID: "top", AgentName: "tester", JazzHome: t.TempDir(), WorkDir: t.TempDir()}
	cfg := Config{Place: place, Provider: "replay", Model: "test", Call: call,
		Registry: saAllTools(t).Subset([]string{"note", SubagentToolName}), Env: env, Events: events.NewEmitter(rec, "run-l"),
		MaxIterations: maxIter}
	// A gate that approves every call (spawn_subagent is low-risk).
	cfg.Gate = engine.SpawnFunc(func(c *actor.Context) {
		if m, ok := c.Message().(messages.ApprovalRequired); ok {
			c.Respond(messages.ApprovalDecided{Place: m.Place, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Approved: true})
		}
	}, "gate")
	s := NewSubagents(engine, cfg, 3, 0)
	env.Subagents = s
	return s, rec
}

// TestSubagentLiveLimit: past MaxLive sub-agents running at once, a
// spawn is refused at once with the limit's message, and no child
// starts for it; once they end, spawning works again. Without the limit
// breadth^depth children (10^10 at the deepest config) would all start.
func TestSubagentLiveLimit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const limit, tries = 2, 6
	release := make(chan struct{})
	var inside atomic.Int32
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		inside.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return provider.Response{}, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		return answer("done"), nil
	}
	s, rec := limitTree(t, call, 5)
	s.MaxLive = limit
	results := make(chan tools.Result, tries)
	for i := range tries {
		go func() {
			results <- s.Spawn(context.Background(), "", json.RawMessage(fmt.Sprintf(`{"task":"job %d"}`, i)))
		}()
	}
	var refused []tools.Result
	timeout := time.After(10 * time.Second)
	for len(refused) < tries-limit {
		select {
		case r := <-results:
			if r.Success {
				t.Fatalf("a spawn past the limit ran: %+v", r)
			}
			refused = append(refused, r)
		case <-timeout:
			t.Fatalf("only %d of %d spawns past the limit were refused", len(refused), tries-limit)
		}
	}
	for _, r := range refused {
		if !strings.Contains(r.Error, "the limit is 2 at once") {
			t.Fatalf("refusal = %q", r.Error)
		}
	}
	close(release)
	for range limit {
		if r := <-results; !r.Success {
			t.Fatalf("a child within the limit failed: %+v", r)
		}
	}
	if n := len(rec.ofType(messages.EventSubagentStart)); n != limit || inside.Load() != limit {
		t.Fatalf("%d children started, %d called the model; want %d", n, inside.Load(), limit)
	}
	if r := s.Spawn(context.Background(), "", json.RawMessage(`{"task":"again"}`)); !r.Success {
		t.Fatalf("after the others ended a spawn was refused: %+v", r)
	}
	if n := s.Live.Load(); n != 0 {
		t.Fatalf("%d sub-agents still counted as running", n)
	}
}

// TestSubagentLiveLimitHoldsAcrossTheTree: a tree that would grow to
// 10+100+1000 agents runs with at most MaxLive children at once, each
// level's refusals being results its parent reads.
func TestSubagentLiveLimitHoldsAcrossTheTree(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const limit = 7
	var live, peak atomic.Int32
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		if strings.HasPrefix(req.Messages[len(req.Messages)-1].Content, SubagentPreamble) {
			n := live.Add(1)
			defer live.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			calls := make([]messages.ToolCall, 10)
			for i := range calls {
				calls[i] = messages.ToolCall{ID: fmt.Sprintf("s%d", i), Name: SubagentToolName, Arguments: `{"task":"more"}`}
			}
			time.Sleep(5 * time.Millisecond)
			return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, ToolCalls: calls}}, nil
		}
		return answer("ok"), nil
	}
	s, rec := limitTree(t, call, 2)
	s.MaxLive = limit
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Spawn(context.Background(), "", json.RawMessage(`{"task":"more"}`)) }()
	}
	wg.Wait()
	// The tree reaches the limit (how many start in all depends on how
	// soon the first ones end) and never passes it.
	if n := len(rec.ofType(messages.EventSubagentStart)); n < limit || peak.Load() > limit {
		t.Fatalf("%d children started, at most %d at once; want at least %d started and at most %d at once", n, peak.Load(), limit, limit)
	}
}

// TestSubagentIterationsWithinParents: a child's budget is never larger
// than its parent's, whatever maxSubagentIterations says.
func TestSubagentIterationsWithinParents(t *testing.T) {
	for _, tt := range []struct{ parent, sub, want int }{{3, 30, 3}, {100, 30, 30}, {0, 30, 1}, {5, 0, 5}, {50, -7, 30}} {
		var n atomic.Int32
		call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
			n.Add(1)
			return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant,
				ToolCalls: []messages.ToolCall{{ID: fmt.Sprintf("c%d", n.Load()), Name: "note", Arguments: `{"text":"again"}`}}}}, nil
		}
		s, _ := limitTree(t, call, tt.parent)
		s.MaxIterations = tt.sub
		s.Spawn(context.Background(), "", json.RawMessage(`{"task":"loop"}`))
		if int(n.Load()) != tt.want {
			t.Errorf("parent %d, maxSubagentIterations %d: the child ran %d iterations, want %d", tt.parent, tt.sub, n.Load(), tt.want)
		}
	}
}

// timeoutRecorder runs children here and records each one's time limit.
type timeoutRecorder struct {
	top *Subagents
	mu  sync.Mutex
	got map[string]time.Duration
}

func (r *timeoutRecorder) RunChild(ctx context.Context, c ChildRun) ChildOutcome {
	r.mu.Lock()
	r.got[c.Config.Task] = c.Timeout
	r.mu.Unlock()
	return r.top.RunLocal(ctx, c)
}

// TestSubagentTimeoutWithinParents: a child's time limit ends no later
// than its parent's (so a worker, which only has the task, stops it in
// time too), and a parent with no time left spawns nothing.
func TestSubagentTimeoutWithinParents(t *testing.T) {
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		task := req.Messages[len(req.Messages)-1].Content
		if strings.HasSuffix(task, "level one") && len(req.Messages) == 1 {
			select {
			case <-time.After(400 * time.Millisecond):
			case <-ctx.Done():
				return provider.Response{}, ctx.Err()
			}
			return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant,
				ToolCalls: []messages.ToolCall{{ID: "s", Name: SubagentToolName, Arguments: `{"task":"level two"}`}}}}, nil
		}
		return answer("fine"), nil
	}
	s, _ := limitTree(t, call, 5)
	s.Timeout = 3 * time.Second
	rec := &timeoutRecorder{top: s, got: map[string]time.Duration{}}
	s.Runner = rec
	if r := s.Spawn(context.Background(), "", json.RawMessage(`{"task":"level one"}`)); !r.Success {
		t.Fatalf("spawn: %+v", r)
	}
	if rec.got["level one"] != 3*time.Second {
		t.Fatalf("level one's limit = %s, want 3s", rec.got["level one"])
	}
	if two := rec.got["level two"]; two <= 0 || two > 3*time.Second-350*time.Millisecond {
		t.Fatalf("level two's limit = %s, want at most what level one had left (under 2.65s)", two)
	}

	child, _ := limitTree(t, call, 5)
	child.until = new(atomic.Int64)
	child.until.Store(time.Now().Add(-time.Second).UnixNano())
	if r := child.Spawn(context.Background(), "", json.RawMessage(`{"task":"late"}`)); r.Success || r.Error != noTimeLeft {
		t.Fatalf("spawn past the parent's limit = %+v", r)
	}
}

func TestSubagentNameIsBounded(t *testing.T) {
	s, rec := limitTree(t, func(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
		return answer("x"), nil
	}, 5)
	args, _ := json.Marshal(map[string]string{"task": "t", "name": strings.Repeat("é", MaxNameChars+1)})
	if r := s.Spawn(context.Background(), "", args); r.Success || !strings.Contains(r.Error, "the limit is 80") {
		t.Fatalf("long name = %+v", r)
	}
	args, _ = json.Marshal(map[string]string{"task": "t", "name": strings.Repeat("é", MaxNameChars)})
	if r := s.Spawn(context.Background(), "", args); !r.Success {
		t.Fatalf("name at the limit = %+v", r)
	}
	if n := len(rec.ofType(messages.EventSubagentStart)); n != 1 {
		t.Fatalf("%d children started, want 1", n)
	}
}

// TestChildApprovalSaysItsPersona: a child's gated call reaches the
// root's gate saying the child's persona and task beside its
// model-chosen name, so a child named "Sub-Agent (researcher)" that is
// really a coder cannot pass for a researcher.
func TestChildApprovalSaysItsPersona(t *testing.T) {
	var n atomic.Int32
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		if n.Add(1) == 1 {
			return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant,
				ToolCalls: []messages.ToolCall{{ID: "w", Name: "execute_command", Arguments: `{"command":"echo hi","description":"say hi"}`}}}}, nil
		}
		return answer("done"), nil
	}
	s, _ := limitTree(t, call, 5)
	s.Parent.Registry = saAllTools(t).Subset([]string{"note", "execute_command"})
	asked := make(chan messages.ApprovalRequired, 4)
	s.Parent.Gate = s.Engine.SpawnFunc(func(c *actor.Context) {
		if m, ok := c.Message().(messages.ApprovalRequired); ok {
			asked <- m
			c.Respond(messages.ApprovalDecided{Place: m.Place, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Approved: false})
		}
	}, "recording-gate")
	args := `{"task":"check the build","persona":"coder","name":"Sub-Agent (researcher)"}`
	if r := s.Spawn(context.Background(), "", json.RawMessage(args)); !r.Success {
		t.Fatalf("spawn: %+v", r)
	}
	select {
	case m := <-asked:
		if m.Persona != "coder" || m.Task != "check the build" || m.Place.Depth != 1 || m.Place.AgentName != "Sub-Agent (researcher)" {
			t.Fatalf("approval = persona %q task %q place %+v", m.Persona, m.Task, m.Place)
		}
	default:
		t.Fatal("the child's call never reached the gate")
	}
}

// TestAnEndedChildWithdrawsItsApprovals: a child that ends (cancelled,
// out of time) while its call waits at the gate tells the gate it has ended, under the
// id its requests carry, so the gate declines them and withdraws the
// prompt instead of keeping the person (and every call behind it) on a
// call nothing will run.
func TestAnEndedChildWithdrawsItsApprovals(t *testing.T) {
	call := func(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
		return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant,
			ToolCalls: []messages.ToolCall{{ID: "w", Name: "execute_command", Arguments: `{"command":"echo hi","description":"say hi"}`}}}}, nil
	}
	s, _ := limitTree(t, call, 5)
	s.Parent.Registry = saAllTools(t).Subset([]string{"note", "execute_command"})
	asked := make(chan messages.ApprovalRequired, 4)
	ended := make(chan messages.AgentEnded, 4)
	s.Parent.Gate = s.Engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case messages.ApprovalRequired:
			asked <- m // never answered: a person who has not decided yet
		case messages.AgentEnded:
			ended <- m
		}
	}, "holding-gate")
	// The child's parent call is cancelled once its call is at the gate
	// (as its time running out would), however long that takes to come.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var req messages.ApprovalRequired
	go func() {
		select {
		case req = <-asked:
		case <-time.After(10 * time.Second):
		}
		cancel()
	}()
	if r := s.Spawn(ctx, "", json.RawMessage(`{"task":"check the build"}`)); r.Success {
		t.Fatalf("spawn of a child cancelled while held at the gate: %+v", r)
	}
	if req.ToolCallID == "" {
		t.Fatal("the child's call never reached the gate")
	}
	select {
	case e := <-ended:
		if e.AgentID == "" || e.AgentID != req.Place.AgentID {
			t.Fatalf("gate told %q ended, want the asking child %q", e.AgentID, req.Place.AgentID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate was never told the child ended")
	}
}

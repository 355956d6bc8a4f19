package actors_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/deadline"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/tools/readtools"
)

// published records what the root and the emitter put on the bus.
type published struct{ got chan any }

func (p published) Publish(subject string, msg any, _ messages.Trace) error {
	select {
	case p.got <- [2]any{subject, msg}:
	default:
	}
	return nil
}

// rootRig runs one run under the real root actor: a real gate (policy
// high-risk unless reachable), the agent on caller, the given tools.
type rootRig struct {
	engine *actor.Engine
	root   *actor.PID
	out    chan actors.RunOutcome
	bus    published
	place  messages.Place
}

type rootOptions struct {
	caller    actors.ModelCaller
	reg       *tools.Registry
	cwd       string
	plan      *faults.Plan
	reachable bool // the gate asks (and nobody answers) instead of approving
	budget    time.Duration
	stream    bool
	maxCalls  int                 // Config.MaxConcurrentCalls
	before    func(*actor.Engine) // called before the root is spawned
}

func startRoot(t *testing.T, o rootOptions) *rootRig {
	t.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := &rootRig{engine: e, out: make(chan actors.RunOutcome, 1), bus: published{got: make(chan any, 256)},
		place: messages.Place{RunID: "run-root", AgentID: "a1", AgentName: "tester"}}
	em := events.NewEmitter(r.bus, r.place.RunID)
	policy := messages.PolicyHighRisk
	if o.reachable {
		policy = messages.PolicyNone
	}
	gate := gateactor.New(gateactor.Config{RunID: r.place.RunID, Policy: policy, Reachable: o.reachable,
		Events: em, Deadline: deadline.New(0), Ctx: context.Background()})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if o.before != nil {
		o.before(e)
	}
	r.root = e.Spawn(actors.NewRun(actors.RunConfig{
		Place: r.place,
		Gate:  faults.Wrap[messages.ApprovalRequired](gate, o.plan, o.plan != nil && o.plan.Gate, "approval gate"),
		Agent: func(gate, root *actor.PID) actor.Producer {
			cfg := actors.Config{Place: r.place, Model: "m", Call: o.caller, Registry: o.reg, Gate: gate, Root: root,
				Env: &tools.Env{WorkDir: o.cwd}, Events: em, MaxIterations: 10, Ctx: ctx, Faults: o.plan, Stream: o.stream,
				MaxConcurrentCalls: o.maxCalls}
			return faults.Wrap[messages.RunRequested](actors.New(cfg), o.plan, o.plan != nil && o.plan.Agent, "agent")
		},
		Request:  messages.RunRequested{Place: r.place, Prompt: "go"},
		Budget:   o.budget,
		Events:   em,
		Bus:      r.bus,
		Finished: func(out actors.RunOutcome) { r.out <- out },
	}), "run", actor.WithID(r.place.RunID), actor.WithMiddleware(supervisor.Recover(r.place, nil)))
	t.Cleanup(func() {
		select {
		case <-e.Poison(r.root).Done():
		case <-time.After(5 * time.Second):
			t.Error("the root did not stop within 5 s")
		}
	})
	return r
}

// wait returns the outcome or fails after d.
func (r *rootRig) wait(t *testing.T, d time.Duration) actors.RunOutcome {
	t.Helper()
	select {
	case o := <-r.out:
		return o
	case <-time.After(d):
		t.Fatalf("the run did not end within %s", d)
	}
	return actors.RunOutcome{}
}

// finished is the RunFinished the root published, if any.
func (r *rootRig) finished() (messages.RunFinished, bool) {
	for {
		select {
		case m := <-r.bus.got:
			p := m.([2]any)
			if p[0] == messages.FinishedSubject(r.place.RunID) {
				return p[1].(messages.RunFinished), true
			}
		default:
			return messages.RunFinished{}, false
		}
	}
}

func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// gatedTool is a low-risk tool: every call of it passes the gate.
func gatedTool() tools.Tool {
	t := tool("poke", func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("poked") })
	t.Level = messages.LevelLowRisk
	return t
}

// TestRootFinishesAndPublishes: a run that ends on its own ends once, and
// its RunFinished goes out on the run's finished subject, without the
// transcript.
func TestRootFinishesAndPublishes(t *testing.T) {
	noLeaks(t)
	s := &script{turns: []provider.Response{ask(call("c1", "poke")), say("done")}}
	r := startRoot(t, rootOptions{caller: s.call, reg: mustRegistry(t, gatedTool())})
	o := r.wait(t, 5*time.Second)
	if !o.OK || o.Answer != "done" || o.Cause != "" || len(o.Transcript) == 0 {
		t.Fatalf("outcome %+v", o)
	}
	f, ok := r.finished()
	if !ok || !f.OK || f.Answer != "done" || f.Transcript != nil {
		t.Fatalf("published RunFinished %+v (found %v)", f, ok)
	}
}

// TestRootCrashesFailTheRun: a crash of the gate (with a call waiting on
// it), of the agent, or of a call actor ends the run within a second,
// failed, with an error naming what crashed, and nothing left running.
func TestRootCrashesFailTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan faults.Plan
		want string
	}{
		{"gate", faults.Plan{Gate: true}, "The approval gate crashed: injected fault in the approval gate"},
		{"agent", faults.Plan{Agent: true}, "The agent crashed: injected fault in the agent"},
		{"call", faults.Plan{Call: true}, "The poke tool call (c1) crashed: injected fault in the tool call actor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			s := &script{turns: []provider.Response{ask(call("c1", "poke")), say("never")}}
			plan := tc.plan
			r := startRoot(t, rootOptions{caller: s.call, reg: mustRegistry(t, gatedTool()), plan: &plan})
			start := time.Now()
			o := r.wait(t, 5*time.Second)
			if took := time.Since(start); took > time.Second {
				t.Errorf("the run took %s to end", took)
			}
			if o.OK || o.Error != tc.want || o.Cause != messages.CauseCrash {
				t.Fatalf("outcome ok=%v cause=%q error=%q, want %q", o.OK, o.Cause, o.Error, tc.want)
			}
			if f, ok := r.finished(); !ok || f.OK || f.Error != tc.want {
				t.Fatalf("published %+v (found %v)", f, ok)
			}
		})
	}
}

// blockingModel streams some text, then waits for its ctx: a model
// stream interrupted mid-answer.
func blockingModel(ctx context.Context, _ provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if onDelta != nil {
		onDelta(provider.Delta{Text: "half an "})
		onDelta(provider.Delta{Text: "answer"})
	}
	<-ctx.Done()
	return provider.Response{}, ctx.Err()
}

// TestRootCancelKeepsThePartialAnswer: a cancel during a model stream
// ends the run within its budget, failed with the cancel's reason, and
// the text streamed so far is the answer.
func TestRootCancelKeepsThePartialAnswer(t *testing.T) {
	noLeaks(t)
	r := startRoot(t, rootOptions{caller: blockingModel, reg: mustRegistry(t), budget: 500 * time.Millisecond, stream: true})
	time.Sleep(50 * time.Millisecond) // the stream is under way
	start := time.Now()
	r.engine.Send(r.root, messages.CancelRun{Place: r.place, Reason: "stopped by test", Cause: messages.CauseCancelled})
	o := r.wait(t, 2*time.Second)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the stop took %s, over its 500ms budget", took)
	}
	if o.OK || o.Error != "stopped by test" || o.Cause != messages.CauseCancelled || o.Answer != "half an answer" {
		t.Fatalf("outcome ok=%v cause=%q error=%q answer=%q", o.OK, o.Cause, o.Error, o.Answer)
	}
}

// TestRootCancelDuringTool: a cancel while a tool runs ends the handler
// through its ctx and the run within the budget.
func TestRootCancelDuringTool(t *testing.T) {
	noLeaks(t)
	started := make(chan struct{})
	slow := tool("slow", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
		close(started)
		<-ctx.Done()
		return tools.Fail("stopped")
	})
	s := &script{turns: []provider.Response{
		{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: "working on it", ToolCalls: []messages.ToolCall{call("c1", "slow")}}},
		say("never"),
	}}
	r := startRoot(t, rootOptions{caller: s.call, reg: mustRegistry(t, slow), budget: time.Second})
	<-started
	start := time.Now()
	r.engine.Send(r.root, messages.CancelRun{Place: r.place, Reason: "Run cancelled before it finished.", Cause: messages.CauseCancelled})
	o := r.wait(t, 3*time.Second)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the stop took %s, over its budget", took)
	}
	if o.OK || o.Cause != messages.CauseCancelled || len(o.Texts) != 1 || o.Texts[0] != "working on it" || o.Answer != "working on it" {
		t.Fatalf("outcome %+v", o)
	}
}

// TestRootGateWaitEndsOnCancel: a call waiting for a human decision that
// never comes ends when the run is stopped.
func TestRootGateWaitEndsOnCancel(t *testing.T) {
	noLeaks(t)
	s := &script{turns: []provider.Response{ask(call("c1", "poke")), say("never")}}
	reg := mustRegistry(t, func() tools.Tool { t := gatedTool(); t.Level = messages.LevelHighRisk; return t }())
	r := startRoot(t, rootOptions{caller: s.call, reg: reg, reachable: true, budget: time.Second})
	time.Sleep(100 * time.Millisecond) // the call reaches the gate, which asks
	r.engine.Send(r.root, messages.CancelRun{Place: r.place, Reason: "bye"})
	o := r.wait(t, 3*time.Second)
	if o.OK || o.Error != "bye" {
		t.Fatalf("outcome %+v", o)
	}
}

// TestCwdIsTheAgents: the calls of one batch all run in the directory the
// batch started in, whatever a cd among them does; the cd moves the agent
// for the next batch.
func TestCwdIsTheAgents(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := mustRegistry(t, readtools.Tools()...)
	cd := messages.ToolCall{ID: "c1", Name: "cd", Arguments: `{"path":"sub"}`}
	s := &script{turns: []provider.Response{
		ask(cd, call("c2", "pwd")),
		ask(call("c3", "pwd")),
		say("done"),
	}}
	r := startRoot(t, rootOptions{caller: s.call, reg: reg, cwd: dir})
	if o := r.wait(t, 5*time.Second); !o.OK {
		t.Fatalf("run failed: %s", o.Error)
	}
	results := map[string]string{}
	for _, req := range s.requests() {
		for _, m := range req.Messages {
			if m.Role == messages.RoleTool {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	sub := filepath.Join(dir, "sub")
	if !strings.Contains(results["c2"], dir) || strings.Contains(results["c2"], sub) {
		t.Errorf("pwd in the cd's batch = %s, want %s", results["c2"], dir)
	}
	if !strings.Contains(results["c3"], sub) {
		t.Errorf("pwd in the next batch = %s, want %s", results["c3"], sub)
	}
}

package gateactor_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/supervisor"
)

const runID = "gate-test"

// harness is a real engine, a real embedded bus, a gate, and a probe actor
// that sends requests to the gate and collects its decisions.
type harness struct {
	t        *testing.T
	engine   *actor.Engine
	bus      *bus.Bus
	gate     *actor.PID
	probe    *actor.PID
	decided  chan messages.ApprovalDecided
	asked    chan messages.ApprovalRequired
	eventsCh chan messages.Event
	// requests maps a call id to the request id it was last asked under.
	requests map[string]string
}

func newHarness(t *testing.T, cfg gateactor.Config) *harness {
	t.Helper()
	return newHarnessOn(t, cfg, bus.Options{})
}

// newHarnessOn is newHarness on the bus opts start (an in-process
// server of the test's, say).
func newHarnessOn(t *testing.T, cfg gateactor.Config, opts bus.Options) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := bus.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, engine: engine, bus: b,
		decided: make(chan messages.ApprovalDecided, 64), asked: make(chan messages.ApprovalRequired, 64),
		eventsCh: make(chan messages.Event, 256), requests: map[string]string{}}
	cfg.RunID = runID
	if w, ok := cfg.Bus.(interface{ setPub(gateactor.Publisher) }); ok {
		w.setPub(b)
	} else {
		cfg.Bus = b
	}
	if cfg.Events == nil {
		cfg.Events = events.NewEmitter(b, runID)
	}
	cfg.Ctx = ctx
	if cfg.Checks.AllowlistApproves == nil {
		cfg.Checks = gateactor.CommandChecks{AllowlistApproves: shellguard.AllowlistApproves, StaticClassify: shellguard.StaticClassify, Keys: shellguard.Keys}
	}
	h.gate = engine.Spawn(gateactor.New(cfg), "gate", actor.WithMiddleware(supervisor.Recover(messages.Place{RunID: runID}, nil)))
	s1, _ := b.Conn().Subscribe(messages.ApprovalRequiredSubject(runID), func(m *nats.Msg) {
		r, err := messages.Decode[messages.ApprovalRequired](m.Data)
		if err == nil {
			h.asked <- r
		}
	})
	s2, _ := b.Conn().Subscribe(messages.ApprovalDecidedSubject(runID), func(m *nats.Msg) {
		if d, err := messages.Decode[messages.ApprovalDecided](m.Data); err == nil {
			engine.Send(h.gate, d)
		}
	})
	s3, _ := b.Conn().Subscribe(messages.EventsWildcard(runID), func(m *nats.Msg) {
		var ev messages.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			h.eventsCh <- ev
		}
	})
	h.probe = engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case messages.ApprovalRequired:
			c.Send(h.gate, m)
		case messages.ApprovalDecided:
			h.decided <- m
		}
	}, "probe")
	t.Cleanup(func() {
		_ = s1.Unsubscribe()
		_ = s2.Unsubscribe()
		_ = s3.Unsubscribe()
		<-engine.Poison(h.probe).Done()
		<-engine.Poison(h.gate).Done()
		cancel()
		cctx, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(cctx)
	})
	return h
}

// request sends a gated call through the probe, so decisions come back to it.
func (h *harness) request(id, tool, level, command string) {
	h.engine.Send(h.probe, messages.ApprovalRequired{
		Place: messages.Place{RunID: runID, ToolCallID: id}, ToolCallID: id, ToolName: tool, RiskLevel: level,
		Message: "test " + tool, ExecuteToolName: "execute_" + tool, ExecuteArgs: json.RawMessage(`{}`), Command: command,
	})
}

func (h *harness) expectDecision(id string) messages.ApprovalDecided {
	h.t.Helper()
	select {
	case d := <-h.decided:
		if d.ToolCallID != id {
			h.t.Fatalf("decision for %s, want %s", d.ToolCallID, id)
		}
		return d
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no decision for %s", id)
	}
	return messages.ApprovalDecided{}
}

func (h *harness) expectAsked(id string) messages.ApprovalRequired {
	h.t.Helper()
	select {
	case r := <-h.asked:
		if r.ToolCallID != id {
			h.t.Fatalf("asked about %s, want %s", r.ToolCallID, id)
		}
		if !strings.HasPrefix(r.RequestID, "apr-") || len(r.RequestID) != 36 {
			h.t.Fatalf("request id %q is not one the gate minted", r.RequestID)
		}
		h.requests[id] = r.RequestID
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatalf("%s was never asked", id)
	}
	return messages.ApprovalRequired{}
}

func (h *harness) expectNoDecision(d time.Duration) {
	h.t.Helper()
	select {
	case x := <-h.decided:
		h.t.Fatalf("unexpected decision %+v", x)
	case <-time.After(d):
	}
}

// answer decides on call id, echoing the request id it was asked under.
func (h *harness) answer(id string, approved bool, remember string) {
	h.decide(messages.ApprovalDecided{RequestID: h.requests[id], ToolCallID: id, Approved: approved,
		DecidedBy: messages.DecidedByHuman, Remember: remember})
}

func (h *harness) decide(d messages.ApprovalDecided) {
	if err := h.bus.Publish(messages.ApprovalDecidedSubject(runID), d, nil); err != nil {
		h.t.Fatal(err)
	}
}

func TestQueuedCallSeesPolicyChangeMadeWhileItWaited(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("A", "write_file", messages.LevelHighRisk, "")
	h.expectAsked("A")
	h.request("B", "write_file", messages.LevelHighRisk, "")
	// B waits behind A: one prompt at a time, nothing decided yet.
	h.expectNoDecision(100 * time.Millisecond)
	h.engine.Send(h.gate, messages.PolicyChanged{Policy: messages.PolicyHighRisk})
	h.answer("A", true, "")
	a := h.expectDecision("A")
	if !a.Approved || a.Auto || a.DecidedBy != messages.DecidedByHuman {
		t.Fatalf("A: %+v", a)
	}
	b := h.expectDecision("B")
	if !b.Approved || !b.Auto || b.DecidedBy != messages.DecidedByPolicy {
		t.Fatalf("B should be approved by the new policy at dequeue: %+v", b)
	}
}

func TestPolicyTable(t *testing.T) {
	cases := []struct {
		name      string
		policy    string
		reachable bool
		level     string
		command   string
		approved  bool
		asked     bool
	}{
		{"unattended no policy declines low-risk", "", false, messages.LevelLowRisk, "", false, false},
		{"interactive no policy approves low-risk", "", true, messages.LevelLowRisk, "", true, false},
		{"interactive no policy asks high-risk", "", true, messages.LevelHighRisk, "", false, true},
		{"read-only declines low-risk unattended", messages.PolicyReadOnly, false, messages.LevelLowRisk, "", false, false},
		{"low-risk approves low-risk", messages.PolicyLowRisk, false, messages.LevelLowRisk, "", true, false},
		{"low-risk declines high-risk unattended", messages.PolicyLowRisk, false, messages.LevelHighRisk, "", false, false},
		{"high-risk approves unknown", messages.PolicyHighRisk, false, messages.LevelUnknown, "rm -rf build", true, false},
		{"read-only approves a provably read-only command", messages.PolicyReadOnly, false, messages.LevelUnknown, "ls -la", true, false},
		{"read-only declines a mutating command", messages.PolicyReadOnly, false, messages.LevelUnknown, "touch x", false, false},
		{"unknown level counts as high-risk", messages.PolicyLowRisk, false, "weird", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, gateactor.Config{Policy: tc.policy, Reachable: tc.reachable})
			tool := "write_file"
			if tc.command != "" {
				tool = "execute_command"
			}
			h.request("c1", tool, tc.level, tc.command)
			if tc.asked {
				h.expectAsked("c1")
				h.expectNoDecision(50 * time.Millisecond)
				return
			}
			d := h.expectDecision("c1")
			if d.Approved != tc.approved {
				t.Fatalf("approved=%v want %v (%+v)", d.Approved, tc.approved, d)
			}
			if !tc.approved && !tc.reachable && d.Note != gateactor.UnattendedRefusal {
				t.Fatalf("unattended refusal should tell the model nobody can answer, got %q", d.Note)
			}
		})
	}
}

func TestCommandAllowlistIsNeverAPrefix(t *testing.T) {
	cases := []struct {
		cmd     string
		entries []string
		want    bool
	}{
		{"git status && rm -rf /", []string{"git status"}, false},
		{"git status && git diff", []string{"git status", "git diff"}, true},
		{"git status --short", []string{"git status"}, true},
		{"git statusfoo", []string{"git status"}, false},
		{"git status; $(curl evil)", []string{"git status"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			h := newHarness(t, gateactor.Config{AutoApprovedCommands: tc.entries})
			h.request("c1", "execute_command", messages.LevelUnknown, tc.cmd)
			d := h.expectDecision("c1")
			if d.Approved != tc.want {
				t.Fatalf("approved=%v want %v", d.Approved, tc.want)
			}
			if tc.want && d.DecidedBy != messages.DecidedByAllowlist {
				t.Fatalf("decided by %q", d.DecidedBy)
			}
		})
	}
}

func TestAlwaysApproveThisToolSettlesQueuedCalls(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("A", "write_file", messages.LevelHighRisk, "")
	h.expectAsked("A")
	h.request("B", "write_file", messages.LevelHighRisk, "")
	h.answer("A", true, messages.RememberTool)
	h.expectDecision("A")
	b := h.expectDecision("B")
	if !b.Approved || b.DecidedBy != messages.DecidedByAllowlist {
		t.Fatalf("B: %+v", b)
	}
}

func TestCancelWhilePromptPendingDeclines(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("A", "rm", messages.LevelHighRisk, "")
	h.expectAsked("A")
	h.request("B", "rm", messages.LevelHighRisk, "")
	h.engine.Send(h.gate, messages.CancelRun{Reason: "test"})
	for _, id := range []string{"A", "B"} {
		d := h.expectDecision(id)
		if d.Approved || d.DecidedBy != messages.DecidedByCancel {
			t.Fatalf("%s: %+v", id, d)
		}
	}
}

func TestStaleAndUnknownDecisionsAreIgnored(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("A", "rm", messages.LevelHighRisk, "")
	h.expectAsked("A")
	h.answer("nope", true, "")
	h.expectNoDecision(100 * time.Millisecond)
	h.answer("A", false, "")
	if d := h.expectDecision("A"); d.Approved {
		t.Fatal("A should be denied")
	}
	h.answer("A", true, "") // duplicate after the fact
	h.expectNoDecision(100 * time.Millisecond)
}

// TestDecisionsNeedTheRequestID: the model picks tool-call ids and can
// repeat them, so they decide nothing. A decision must echo the id the
// gate minted for the request being asked; one sent before a call was
// asked (for an id the model will reuse), one naming the call only, or
// one carrying another request's id changes nothing, and two calls with
// one model id are asked, and decided, one by one.
func TestDecisionsNeedTheRequestID(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("dup", "write_file", messages.LevelHighRisk, "")
	first := h.expectAsked("dup")
	h.answer("dup", false, "")
	if d := h.expectDecision("dup"); d.Approved || d.RequestID != first.RequestID {
		t.Fatalf("first: %+v", d)
	}
	// Decisions prepared for the next call with the same model id.
	h.decide(messages.ApprovalDecided{ToolCallID: "dup", Approved: true, DecidedBy: messages.DecidedByHuman})
	h.decide(messages.ApprovalDecided{RequestID: first.RequestID, ToolCallID: "dup", Approved: true})
	h.request("dup", "write_file", messages.LevelHighRisk, "")
	second := h.expectAsked("dup")
	if second.RequestID == first.RequestID {
		t.Fatal("two asks share a request id")
	}
	h.decide(messages.ApprovalDecided{ToolCallID: "dup", Approved: true})
	h.decide(messages.ApprovalDecided{RequestID: first.RequestID, Approved: true})
	h.decide(messages.ApprovalDecided{RequestID: second.RequestID, ToolCallID: "other", Approved: true})
	h.decide(messages.ApprovalDecided{RequestID: strings.ToUpper(second.RequestID), Approved: true})
	h.expectNoDecision(150 * time.Millisecond)
	h.answer("dup", false, "")
	if d := h.expectDecision("dup"); d.Approved || d.RequestID != second.RequestID {
		t.Fatalf("second: %+v", d)
	}
}

// TestEventsMarkAskedApprovals: an asked approval is announced with its
// request id and asked:true; one policy settles is asked:false, no id.
func TestEventsMarkAskedApprovals(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("auto", "write_file", messages.LevelLowRisk, "")
	h.expectDecision("auto")
	h.request("human", "write_file", messages.LevelHighRisk, "")
	r := h.expectAsked("human")
	h.answer("human", true, "")
	h.expectDecision("human")
	got := map[string][]messages.Event{}
	timeout := time.After(3 * time.Second)
	for len(got["auto"])+len(got["human"]) < 4 {
		select {
		case ev := <-h.eventsCh:
			got[ev.ToolCallID] = append(got[ev.ToolCallID], ev)
		case <-timeout:
			t.Fatalf("events: %+v", got)
		}
	}
	for _, ev := range got["auto"] {
		if ev.Asked == nil || *ev.Asked || ev.RequestID != "" {
			t.Errorf("auto-approved %s: asked=%v requestId=%q", ev.Type, ev.Asked, ev.RequestID)
		}
	}
	for _, ev := range got["human"] {
		if ev.Asked == nil || !*ev.Asked || ev.RequestID != r.RequestID {
			t.Errorf("asked %s: asked=%v requestId=%q", ev.Type, ev.Asked, ev.RequestID)
		}
	}
}

func TestClassifierFailsClosed(t *testing.T) {
	replies := []struct {
		reply string
		err   error
		want  bool
	}{
		{"read-only", nil, true},
		{" low-risk \n", nil, true},
		{"", nil, false},
		{"READ-ONLY please", nil, false},
		{"read-only", context.DeadlineExceeded, false},
	}
	for _, r := range replies {
		t.Run(r.reply, func(t *testing.T) {
			h := newHarness(t, gateactor.Config{Policy: messages.PolicyLowRisk, Reachable: true, ModelContext: true,
				Classify: func(ctx context.Context, cmd string) (string, error) { return trimmed(r.reply), r.err }})
			h.request("c1", "execute_command", messages.LevelUnknown, "make deploy-docs")
			if r.want {
				if d := h.expectDecision("c1"); !d.Approved || d.DecidedBy != messages.DecidedByPolicy {
					t.Fatalf("%+v", d)
				}
				return
			}
			h.expectAsked("c1") // high-risk under low-risk with a human: asked, not approved
		})
	}
}

func trimmed(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\n') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n') {
		s = s[:len(s)-1]
	}
	return s
}

func TestEventsForEveryGatedCall(t *testing.T) {
	h := newHarness(t, gateactor.Config{Policy: messages.PolicyHighRisk})
	h.request("c1", "write_file", messages.LevelHighRisk, "")
	h.expectDecision("c1")
	var types []string
	deadline := time.After(3 * time.Second)
	for len(types) < 2 {
		select {
		case ev := <-h.eventsCh:
			types = append(types, ev.Type)
			if ev.Type == messages.EventApprovalResolved && (ev.Auto == nil || !*ev.Auto || ev.Approved == nil || !*ev.Approved) {
				t.Fatalf("resolved event: %+v", ev)
			}
		case <-deadline:
			t.Fatalf("events: %v", types)
		}
	}
	if types[0] != messages.EventApprovalRequired || types[1] != messages.EventApprovalResolved {
		t.Fatalf("order: %v", types)
	}
}

func (h *harness) requestFrom(id, agent string, depth int, tool string) {
	h.engine.Send(h.probe, messages.ApprovalRequired{
		Place: messages.Place{RunID: runID, AgentID: agent, AgentName: "name of " + agent, Depth: depth, ToolCallID: id}, ToolCallID: id,
		ToolName: tool, RiskLevel: messages.LevelHighRisk, Message: "test " + tool, ExecuteToolName: "execute_" + tool,
		ExecuteArgs: json.RawMessage(`{}`), Task: "task of " + agent,
	})
}

// TestAlwaysOnAChildIsScopedToIt (issue 10, class 4): "always" answered
// on a sub-agent's prompt approves that tool for that sub-agent only; its
// parent and its siblings are still asked. The request says its scope.
// "always" on the top-level agent's prompt holds for the whole tree.
func TestAlwaysOnAChildIsScopedToIt(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.requestFrom("k1", "kid", 1, "write_file")
	r := h.expectAsked("k1")
	if r.RememberScope != messages.ScopeAgent || r.Task != "task of kid" || r.Place.Depth != 1 {
		t.Fatalf("child's request: scope %q task %q depth %d", r.RememberScope, r.Task, r.Place.Depth)
	}
	h.answer("k1", true, messages.RememberTool)
	h.expectDecision("k1")

	h.requestFrom("k2", "kid", 1, "write_file")
	if d := h.expectDecision("k2"); !d.Approved || d.DecidedBy != messages.DecidedByAllowlist {
		t.Fatalf("the child's own next write: %+v", d)
	}
	for _, who := range []struct {
		id, agent string
		depth     int
	}{{"s1", "sibling", 1}, {"p1", "top", 0}} {
		h.requestFrom(who.id, who.agent, who.depth, "write_file")
		r := h.expectAsked(who.id) // not widened to them
		h.answer(who.id, true, "")
		h.expectDecision(who.id)
		if who.depth == 0 && r.RememberScope != messages.ScopeRun {
			t.Fatalf("top-level request scope %q", r.RememberScope)
		}
	}
	// The top-level agent's "always" reaches the whole tree.
	h.requestFrom("p2", "top", 0, "edit_file")
	h.expectAsked("p2")
	h.answer("p2", true, messages.RememberTool)
	h.expectDecision("p2")
	h.requestFrom("s2", "sibling", 1, "edit_file")
	if d := h.expectDecision("s2"); !d.Approved || d.DecidedBy != messages.DecidedByAllowlist {
		t.Fatalf("a child after the parent's always: %+v", d)
	}
}

// A command's request says which keys "always this command" adds, the
// same ones the answer then remembers: `npm -v` keys as "npm", so the
// person reads that "c" approves every npm command, not only this one.
func TestAskedCommandSaysWhatAlwaysAdds(t *testing.T) {
	h := newHarness(t, gateactor.Config{Reachable: true})
	h.request("c1", "execute_command", messages.LevelHighRisk, "npm -v")
	r := h.expectAsked("c1")
	if strings.Join(r.CommandKeys, ",") != "npm" {
		t.Fatalf("keys shown %q, want [npm]", r.CommandKeys)
	}
	h.answer("c1", true, messages.RememberCommand)
	h.expectDecision("c1")
	h.request("c2", "execute_command", messages.LevelHighRisk, "npm publish")
	if d := h.expectDecision("c2"); !d.Approved || d.DecidedBy != messages.DecidedByAllowlist {
		t.Fatalf("the key shown is not the key remembered: %+v", d)
	}
}

package gateactor_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/messages"
)

// withdrawals is the gate's bus, recording what it is told to withdraw.
type withdrawals struct {
	pub gateactor.Publisher
	mu  sync.Mutex
	got []messages.ApprovalDecided
}

func (w *withdrawals) Publish(subject string, msg any, trace messages.Trace) error {
	return w.pub.Publish(subject, msg, trace)
}

func (w *withdrawals) setPub(p gateactor.Publisher) { w.pub = p }

func (w *withdrawals) Withdraw(d messages.ApprovalDecided) {
	w.mu.Lock()
	w.got = append(w.got, d)
	w.mu.Unlock()
}

func (w *withdrawals) ids() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := map[string]int{}
	for _, d := range w.got {
		n[d.RequestID]++
	}
	return n
}

// TestEveryAskedRequestIsWithdrawnOnce: whatever ends an asked request
// (a person's answer, a cancel), the gate tells its bus once, under the
// request id it minted, so no copy of it is left for anyone to answer;
// a call it settled without asking has no copy and is not named.
func TestEveryAskedRequestIsWithdrawnOnce(t *testing.T) {
	w := &withdrawals{}
	h := newHarness(t, gateactor.Config{Reachable: true, Policy: messages.LevelReadOnly, Bus: w})
	h.request("auto", "read_file", messages.LevelReadOnly, "")
	h.expectDecision("auto")
	h.request("A", "rm", messages.LevelHighRisk, "")
	a := h.expectAsked("A")
	h.answer("A", true, "")
	h.expectDecision("A")
	h.request("B", "rm", messages.LevelHighRisk, "")
	b := h.expectAsked("B")
	h.engine.Send(h.gate, messages.CancelRun{Reason: "test"})
	if d := h.expectDecision("B"); d.DecidedBy != messages.DecidedByCancel {
		t.Fatalf("B: %+v", d)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := w.ids()
		if len(got) == 2 && got[a.RequestID] == 1 && got[b.RequestID] == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("withdrawn %v, want %s and %s once each", got, a.RequestID, b.RequestID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unaskedLog is a gate's bus and event publisher in one, recording in
// one order what it is told of calls settled without asking and the
// approval events it publishes.
type unaskedLog struct {
	withdrawals
	log []string
}

func (u *unaskedLog) Unasked(d messages.ApprovalDecided) {
	u.mu.Lock()
	u.log = append(u.log, "unasked "+d.ToolCallID)
	u.mu.Unlock()
}

// events publishes the gate's events into the log, then on the bus.
type eventLog struct{ u *unaskedLog }

func (e eventLog) Publish(subject string, msg any, trace messages.Trace) error {
	if ev, ok := msg.(messages.Event); ok {
		e.u.mu.Lock()
		e.u.log = append(e.u.log, ev.Type+" "+ev.ToolCallID)
		e.u.mu.Unlock()
	}
	return nil
}

// TestEveryUnaskedCallIsToldBeforeItsEvents: a call the gate settles
// itself (policy, tool allowlist, a cancel before it was asked) is told
// to the bus once, before its approval_required event is published, so
// an answerer that counts tool-call ids has counted it before any reader
// can see a line under that id; an asked call is not told (its request
// reaches the bus itself).
func TestEveryUnaskedCallIsToldBeforeItsEvents(t *testing.T) {
	u := &unaskedLog{}
	h := newHarness(t, gateactor.Config{Reachable: true, Policy: messages.LevelReadOnly, AutoApproveTools: []string{"ls"},
		Bus: u, Events: events.NewEmitter(eventLog{u}, runID)})
	h.request("auto", "read_file", messages.LevelReadOnly, "")
	h.expectDecision("auto")
	h.request("allow", "ls", messages.LevelHighRisk, "")
	h.expectDecision("allow")
	h.request("A", "rm", messages.LevelHighRisk, "")
	h.expectAsked("A")
	h.request("queued", "rm", messages.LevelHighRisk, "")
	h.engine.Send(h.gate, messages.CancelRun{Reason: "test"})
	h.expectDecision("A")
	if d := h.expectDecision("queued"); d.DecidedBy != messages.DecidedByCancel || d.RequestID != "" {
		t.Fatalf("queued: %+v", d)
	}
	u.mu.Lock()
	log := append([]string(nil), u.log...)
	u.mu.Unlock()
	told := map[string]int{}
	for i, l := range log {
		kind, id, _ := strings.Cut(l, " ")
		switch kind {
		case "unasked":
			told[id]++
		case messages.EventApprovalRequired, messages.EventApprovalResolved:
			if id != "A" && told[id] != 1 {
				t.Fatalf("line %d %q went out before the bus was told of %s once: %q", i, l, id, log)
			}
		}
	}
	if len(told) != 3 || told["A"] != 0 {
		t.Fatalf("told %v, want auto, allow and queued once each: %q", told, log)
	}
}

// TestAnEndedSubAgentsCallsAreNotAsked: a sub-agent that ends (its time
// ran out, it was cancelled, its worker was lost) while a call of its is
// put to a person has that call declined and its prompt withdrawn, so
// the person is not left deciding on something nothing will run, and the
// calls queued behind it are asked at once. Its other queued calls, and
// one it sends after its end, are declined without a prompt; another
// sub-agent's and the top-level agent's calls are not touched.
func TestAnEndedSubAgentsCallsAreNotAsked(t *testing.T) {
	w := &withdrawals{}
	h := newHarness(t, gateactor.Config{Reachable: true, Bus: w})
	h.requestFrom("c1", "child-1", 1, "write_file")
	asked := h.expectAsked("c1")
	h.requestFrom("c2", "child-1", 1, "write_file")
	h.requestFrom("o1", "child-2", 1, "write_file")
	h.request("top", "write_file", messages.LevelHighRisk, "")
	h.expectNoDecision(50 * time.Millisecond)

	h.engine.Send(h.gate, messages.AgentEnded{AgentID: "child-1"})
	seen := map[string]bool{}
	for range 2 {
		select {
		case d := <-h.decided:
			if d.Approved || d.DecidedBy != messages.DecidedByCancel || !strings.Contains(d.Note, "ended") {
				t.Fatalf("%s: %+v, want declined as its agent ended", d.ToolCallID, d)
			}
			seen[d.ToolCallID] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("decided %v, want c1 and c2", seen)
		}
	}
	if !seen["c1"] || !seen["c2"] {
		t.Fatalf("decided %v, want c1 and c2", seen)
	}
	if got := w.ids(); got[asked.RequestID] != 1 {
		t.Fatalf("withdrawn %v, want the asked request %s once", got, asked.RequestID)
	}
	// The prompt goes to the next live call; the ended agent's queued
	// call was settled without one.
	h.expectAsked("o1")
	h.answer("o1", true, "")
	if d := h.expectDecision("o1"); !d.Approved {
		t.Fatalf("o1: %+v", d)
	}
	h.expectAsked("top")
	// A late call of the ended agent (or of one it started) is declined
	// unasked, even while the person is being asked about another.
	h.requestFrom("late", "child-1", 1, "write_file")
	if d := h.expectDecision("late"); d.Approved || d.DecidedBy != messages.DecidedByCancel {
		t.Fatalf("late: %+v", d)
	}
	h.engine.Send(h.probe, messages.ApprovalRequired{
		Place:      messages.Place{RunID: runID, AgentID: "grandchild", Depth: 2, ParentAgentID: "child-1", ToolCallID: "g1"},
		ToolCallID: "g1", ToolName: "write_file", RiskLevel: messages.LevelHighRisk, Message: "test",
		ExecuteToolName: "execute_write_file", ExecuteArgs: []byte(`{}`),
	})
	if d := h.expectDecision("g1"); d.Approved || d.DecidedBy != messages.DecidedByCancel {
		t.Fatalf("g1: %+v", d)
	}
	h.answer("top", true, "")
	if d := h.expectDecision("top"); !d.Approved {
		t.Fatalf("top: %+v", d)
	}
}

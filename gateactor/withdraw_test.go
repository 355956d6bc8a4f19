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

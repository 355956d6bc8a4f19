package gateactor_test

import (
	"sync"
	"testing"
	"time"

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

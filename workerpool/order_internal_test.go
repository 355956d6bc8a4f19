package workerpool

import (
	"context"
	"sync"
	"testing"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
)

// putKV keeps the cancel records a finished task writes; nothing else of
// the bucket is used here.
type putKV struct{}

func (putKV) Put(context.Context, string, []byte) (uint64, error) { return 1, nil }

type heardEvents struct {
	mu    sync.Mutex
	types []string
}

func (h *heardEvents) Publish(_ string, msg any, _ messages.Trace) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.types = append(h.types, msg.(messages.Event).Type)
	return nil
}

// TestResultAheadOfItsEvents: events are core messages and the result
// comes through the stream, so the result can arrive first. The task ends
// only when the events the result counts have arrived, and they are
// re-emitted on the run's stream, not dropped behind the result.
func TestResultAheadOfItsEvents(t *testing.T) {
	place := messages.Place{RunID: "r", AgentID: "a", AgentName: "parent"}
	heard := &heardEvents{}
	tk := &remote{d: &Dispatcher{kv: putKV{}}, id: "t1", key: "k1", cfg: actors.Config{Place: place,
		Ledger: ledger.New(place, nil), Events: events.NewEmitter(heard, "r")},
		decisions: map[[2]int]messages.WorkDecision{}, asked: map[[2]int]bool{}, atGate: map[[2]int]string{}}
	enc := func(v any) []byte {
		b, err := messages.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// in is a message worker w sealed with the task's key.
	in := func(kind string, v any) inbound {
		subject := messages.WorkerSubject("p", "w", "r", "t1", kind)
		data := enc(v)
		h, seal := sealer("k1")(subject, data)
		return inbound{worker: "w", kind: kind, subject: subject, data: data, header: bus.Header{h: {seal}}}
	}
	event := func(seq int, typ string) inbound {
		raw := enc(messages.Event{Type: typ, Place: place})
		return in(messages.WorkKindEvent, messages.WorkEvent{TaskID: "t1", Attempt: 1, Event: raw, Seq: seq})
	}
	steps := []inbound{
		in(messages.WorkKindClaim, messages.WorkClaimed{TaskID: "t1", Attempt: 1}),
		event(1, messages.EventToolExecutionStart),
		in(messages.WorkKindResult, messages.WorkResult{TaskID: "t1", Attempt: 1, Events: 3,
			Finished: messages.RunFinished{Place: place, OK: true, Answer: "done"}}),
		event(2, messages.EventToolExecutionComplete),
	}
	// The same sealed event again (anyone who read it may have the
	// server deliver it once more) is neither emitted nor counted.
	steps = append(steps[:2], append([]inbound{event(1, messages.EventToolExecutionStart)}, steps[2:]...)...)
	for i, m := range steps {
		if _, end := tk.handle(m); end {
			t.Fatalf("ended at step %d, before the events the result counts", i)
		}
	}
	o, end := tk.handle(event(3, messages.EventComplete))
	if !end || o.Finished.Answer != "done" || o.Kind != "" {
		t.Fatalf("after the last event: end %v, %+v", end, o)
	}
	want := []string{messages.EventToolExecutionStart, messages.EventToolExecutionComplete, messages.EventComplete}
	if len(heard.types) != len(want) {
		t.Fatalf("events re-emitted %v, want %v", heard.types, want)
	}
	for i := range want {
		if heard.types[i] != want[i] {
			t.Fatalf("events re-emitted %v, want %v", heard.types, want)
		}
	}

	// A result whose events all came first ends the task at once.
	tk2 := &remote{d: tk.d, id: "t1", key: "k1", cfg: tk.cfg, decisions: tk.decisions, asked: tk.asked, atGate: tk.atGate}
	tk2.handle(steps[0])
	tk2.handle(event(1, messages.EventToolExecutionStart))
	if _, end := tk2.handle(in(messages.WorkKindResult, messages.WorkResult{TaskID: "t1", Attempt: 1, Events: 1,
		Finished: messages.RunFinished{Place: place, OK: true}})); !end {
		t.Fatal("a result with nothing missing did not end the task")
	}
}

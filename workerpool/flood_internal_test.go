package workerpool

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/workstore"
	"github.com/nats-io/nats.go"
)

// TestAFloodingWorkerFailsItsChild: a worker that holds a task (and so
// its key) sends the run event after event, or approval request after
// approval request (each new one goes to the root gate, which may ask a
// person), each valid and sealed, through a real server. The run takes
// in no more than the task's bound, in events or in bytes, and the child
// fails saying why, well before its own time limit.
func TestAFloodingWorkerFailsItsChild(t *testing.T) {
	for _, c := range []struct {
		name            string
		maxEvents, maxB int
		chunk           int
		approvals       bool
	}{
		{"events", 50, 0, 10, false},
		{"bytes", 0, 20_000, 1_000, false},
		{"approvals", 50, 0, 10, true},
		{"approval bytes", 0, 20_000, 1_000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, srv, b := poolBus(t, 30*time.Second)
			const run = "run-flood"
			d, err := NewDispatcher(ctx, DispatcherOptions{Conn: b, Pool: workstore.DefaultPool, RunID: run,
				MaxTaskEvents: c.maxEvents, MaxTaskEventBytes: c.maxB})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			place := messages.Place{RunID: run, AgentID: "top-1", AgentName: "child", ParentAgentID: "top", Depth: 1}
			kept := &keptEvents{}
			out := make(chan actors.ChildOutcome, 1)
			go func() {
				out <- d.RunChild(ctx, actors.ChildRun{Config: actors.Config{Place: place, Ledger: ledger.New(place, nil),
					Events: events.NewEmitter(kept, run)}, Prompt: "hi", Timeout: 20 * time.Second})
			}()
			// The hostile worker: it was given the task, so it has its key.
			tk := sentTask(ctx, t, d)
			nc := srv.Conn(t)
			say := func(kind string, v any) bool {
				data, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				subject := messages.WorkerSubject(workstore.DefaultPool, "w", run, tk.id, kind)
				h, seal := sealer(tk.key)(subject, data)
				msg := nats.NewMsg(subject)
				msg.Data = data
				msg.Header.Set(h, seal)
				return nc.PublishMsg(msg) == nil
			}
			say(messages.WorkKindClaim, messages.WorkClaimed{TaskID: tk.id, Attempt: 1, LeaseMs: 10_000})
			text := strings.Repeat("x", c.chunk)
			var o actors.ChildOutcome
			sent := 0
		flood:
			for seq := 1; ; seq++ {
				if c.approvals {
					say(messages.WorkKindApproval, messages.WorkApproval{TaskID: tk.id, Attempt: 1, Seq: seq,
						Required: messages.ApprovalRequired{Place: place, ToolCallID: "c", ToolName: "write_file", Message: text}})
				} else {
					raw, _ := messages.Encode(messages.Event{Type: messages.EventTextChunk, Place: place, Delta: text})
					say(messages.WorkKindEvent, messages.WorkEvent{TaskID: tk.id, Attempt: 1, Event: raw, Seq: seq})
				}
				sent++
				select {
				case o = <-out:
					break flood
				case <-ctx.Done():
					t.Fatalf("the child did not fail after %d events", sent)
				default:
				}
				if sent%100 == 0 {
					_ = nc.Flush()
				}
			}
			if o.Kind != supervisor.FailRun || !strings.Contains(o.Reason, "more events than a task may") {
				t.Fatalf("outcome %+v, want a failure that says the worker sent too many events", o)
			}
			kept.mu.Lock()
			n, bytes := len(kept.evs), 0
			for _, ev := range kept.evs {
				bytes += len(ev.Delta)
			}
			kept.mu.Unlock()
			// The task's goroutine has ended: its records are still.
			if asked := len(tk.asked); c.maxEvents > 0 && asked > c.maxEvents || c.maxB > 0 && asked*c.chunk > c.maxB {
				t.Fatalf("the run took in %d approval requests, the bound is %d events, %d bytes", asked, c.maxEvents, c.maxB)
			}
			if c.maxEvents > 0 && n > c.maxEvents {
				t.Fatalf("the run took in %d events, the bound is %d", n, c.maxEvents)
			}
			if c.maxB > 0 && bytes > c.maxB {
				t.Fatalf("the run took in %d bytes of text, the bound is %d", bytes, c.maxB)
			}
			t.Logf("failed after %d events sent, %d kept (%d bytes of text): %s", sent, n, bytes, o.Reason)
		})
	}
}

package humanio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/humanio"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
)

// crashNow makes crashingGate panic, as a bug in the gate would.
type crashNow struct{}

// crashingGate is the real gate that panics on crashNow.
type crashingGate struct{ next actor.Receiver }

func (g crashingGate) Receive(c *actor.Context) {
	if _, ok := c.Message().(crashNow); ok {
		panic("the gate's bug")
	}
	g.next.Receive(c)
}

// gateTap is the run's gate bus as app wires it: requests go on the bus,
// and the bridge is told of every call the gate resolved.
type gateTap struct {
	b  *bus.Bus
	br *humanio.Bridge
}

func (t gateTap) Publish(subject string, msg any, trace messages.Trace) error {
	return t.b.Publish(subject, msg, trace)
}
func (t gateTap) Withdraw(d messages.ApprovalDecided) { t.br.Settled(d) }
func (t gateTap) Unasked(d messages.ApprovalDecided)  { t.br.Settled(d) }

// bridgeOut records the bridge's lines and says when one is written.
type bridgeOut struct {
	mu  sync.Mutex
	got []string
	new chan struct{}
}

func (o *bridgeOut) WriteLine(b []byte) {
	o.mu.Lock()
	o.got = append(o.got, string(b))
	o.mu.Unlock()
	select {
	case o.new <- struct{}{}:
	default:
	}
}

// TestDecisionAfterTheGateCrashedDecidesNothing: a request the bridge
// shows, then a panic in the gate (it becomes a tombstone, as every
// actor of the run tree does): an answer to the request, by request id
// or by call id alone, reaches the crashed gate and decides nothing; when
// the gate's owner stops it, it declines the asked call and the one
// queued behind it, the bridge is told and refuses later answers, and
// nothing waits past its bound.
func TestDecisionAfterTheGateCrashedDecidesNothing(t *testing.T) {
	const run = "run-crash"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Start(ctx, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(c)
	})
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	out := &bridgeOut{new: make(chan struct{}, 1)}
	br := humanio.NewBridge(run, b, out)
	if err := br.Attach(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Detach)

	failed := make(chan supervisor.Failure, 1)
	cfg := gateactor.Config{RunID: run, Reachable: true, Bus: gateTap{b: b, br: br}, Events: events.NewEmitter(b, run), Ctx: ctx}
	gate := engine.Spawn(func() actor.Receiver { return crashingGate{next: gateactor.New(cfg)()} }, "gate",
		actor.WithMiddleware(supervisor.Recover(messages.Place{RunID: run}, func(_ *actor.Context, f supervisor.Failure) { failed <- f })))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			<-engine.Poison(gate).Done()
		}
	})
	// Decisions reach the gate as app's wiring hands them over.
	sub, err := b.Conn().Subscribe(messages.ApprovalDecidedSubject(run), func(m *nats.Msg) {
		if d, err := messages.Decode[messages.ApprovalDecided](m.Data); err == nil {
			engine.Send(gate, d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	// The agent's side: it sends the gated calls and gets the answers.
	decided := make(chan messages.ApprovalDecided, 8)
	agent := engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case messages.ApprovalRequired:
			c.Send(gate, m)
		case messages.ApprovalDecided:
			decided <- m
		}
	}, "agent")
	t.Cleanup(func() { <-engine.Poison(agent).Done() })
	none := func(within time.Duration) {
		t.Helper()
		select {
		case d := <-decided:
			t.Fatalf("a decision reached the call: %+v", d)
		case <-time.After(within):
		}
	}

	inR, inW := io.Pipe()
	warnings := make(chan string, 16)
	served := make(chan struct{})
	go func() {
		defer close(served)
		br.Serve(inR, func(w string) { warnings <- w })
	}()
	t.Cleanup(func() { _ = inW.Close() })

	for _, id := range []string{"c1", "c2"} {
		engine.Send(agent, messages.ApprovalRequired{Place: messages.Place{RunID: run}, ToolCallID: id, ToolName: "delete_file",
			RiskLevel: messages.LevelHighRisk, ExecuteToolName: "execute_delete_file", ExecuteArgs: json.RawMessage(`{"path":"x"}`)})
	}
	var rid string
	for rid == "" {
		select {
		case <-out.new:
		case <-ctx.Done():
			t.Fatal("the bridge never showed the request")
		}
		out.mu.Lock()
		var line struct {
			RequestID string `json:"requestId"`
		}
		if len(out.got) > 0 && json.Unmarshal([]byte(out.got[0]), &line) == nil {
			rid = line.RequestID
		}
		out.mu.Unlock()
	}

	engine.Send(gate, crashNow{})
	select {
	case f := <-failed:
		if !strings.Contains(f.Reason, "the gate's bug") {
			t.Fatalf("failure %+v", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate's panic was never reported")
	}
	fmt.Fprintf(inW, "{\"type\":\"approval_decision\",\"toolCallId\":\"c1\",\"approved\":true}\n")
	fmt.Fprintf(inW, "{\"type\":\"approval_decision\",\"requestId\":%q,\"approved\":true}\n", rid)
	// Nothing comes back to the call: the crashed gate took no answer.
	none(300 * time.Millisecond)

	// The owner stops the gate (the run's teardown): what it held is
	// declined, never approved, and the bridge is told.
	select {
	case <-engine.Poison(gate).Done():
		stopped = true
	case <-time.After(5 * time.Second):
		t.Fatal("the crashed gate did not stop")
	}
	for _, id := range []string{"c1", "c2"} {
		select {
		case d := <-decided:
			if d.ToolCallID != id || d.Approved || d.DecidedBy != messages.DecidedByCancel {
				t.Fatalf("after the crash, want %s declined by the cancel: %+v", id, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was never answered after the gate stopped", id)
		}
	}
	// The call-id-only answer was taken by the bridge (it cannot know
	// the gate is gone) and the second one refused; once told, the
	// bridge refuses every answer: c2 was never shown.
	fmt.Fprintf(inW, "{\"type\":\"approval_decision\",\"toolCallId\":\"c2\",\"approved\":true}\n")
	_ = inW.Close()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the bridge did not end at stdin's EOF")
	}
	close(warnings)
	var all []string
	for w := range warnings {
		all = append(all, w)
	}
	if len(all) != 2 || !strings.Contains(all[0], "already decided") || !strings.Contains(all[1], "c2") {
		t.Fatalf("warnings %q", all)
	}
	none(100 * time.Millisecond)
}

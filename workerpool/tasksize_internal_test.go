package workerpool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/workstore"
)

// TestTaskTooLargeForTheBusFailsAtOnce: a child whose task is larger than
// the server takes fails at once, saying so, instead of being sent again
// for fifteen seconds and failing with the bus's error.
func TestTaskTooLargeForTheBusFailsAtOnce(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true, Configure: func(o *server.Options) { o.MaxPayload = 64 << 10 }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Start(ctx, bus.Options{InProcess: srv.Server})
	if err != nil {
		t.Fatal(err)
	}
	defer b.CloseNow()
	if err := workstore.Ensure(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	const run = "run-big-task"
	d, err := NewDispatcher(ctx, DispatcherOptions{Conn: b, Pool: workstore.DefaultPool, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	place := messages.Place{RunID: run, AgentID: "top-1", AgentName: "child", ParentAgentID: "top", Depth: 1}
	start := time.Now()
	out := d.RunChild(ctx, actors.ChildRun{Engine: engine, Config: actors.Config{Place: place, Ledger: ledger.New(place, nil),
		Events: events.NewEmitter(&keptEvents{}, run), Registry: pairRegistry(t)}, Prompt: strings.Repeat("p", 100<<10), Timeout: 20 * time.Second})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the refused task took %s to fail", took)
	}
	if out.Kind != supervisor.FailRun || !strings.Contains(out.Reason, "the task is too large to send to worker pool") ||
		!strings.Contains(out.Reason, "larger than the bus takes") {
		t.Fatalf("outcome %+v", out)
	}
}

package workerpool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/gateactor"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workstore"
)

// hostileWorker is a run's dispatcher with one remote child (registry
// reg, the run's gate made of gate), whose task the test's own connection
// holds as worker "w": say speaks for the worker, sealed with the task's
// key, and decisions are what the runner sends it.
type hostileWorker struct {
	ctx       context.Context
	place     messages.Place // the child's
	task      *remote
	out       chan actors.ChildOutcome
	decisions chan messages.WorkDecision
}

func newHostileWorker(t *testing.T, gate gateactor.Config, reg *tools.Registry) (*hostileWorker, func(task, kind string, v any)) {
	t.Helper()
	ctx, srv, b := poolBus(t, 30*time.Second)
	run := gate.RunID
	d, err := NewDispatcher(ctx, DispatcherOptions{Conn: b, Pool: workstore.DefaultPool, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := engine.Spawn(gateactor.New(gate), "gate")
	place := messages.Place{RunID: run, AgentID: "top-1", AgentName: "child", ParentAgentID: "top", Depth: 1}
	h := &hostileWorker{ctx: ctx, place: place, out: make(chan actors.ChildOutcome, 1), decisions: make(chan messages.WorkDecision, 16)}
	go func() {
		h.out <- d.RunChild(ctx, actors.ChildRun{Engine: engine, Config: actors.Config{Place: place, Ledger: ledger.New(place, nil),
			Events: events.NewEmitter(&keptEvents{}, run), Registry: reg, Gate: g}, Prompt: "hi", Timeout: 20 * time.Second})
	}()
	h.task = sentTask(ctx, t, d)
	nc := srv.Conn(t)
	sub, err := nc.Subscribe(messages.WorkDecisionSubject(workstore.DefaultPool, "w", h.task.id), func(m *nats.Msg) {
		if wd, err := messages.Decode[messages.WorkDecision](m.Data); err == nil {
			h.decisions <- wd
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	say := func(task, kind string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		subject := messages.WorkerSubject(workstore.DefaultPool, "w", run, task, kind)
		hdr, seal := sealer(h.task.key)(subject, data)
		msg := nats.NewMsg(subject)
		msg.Data = data
		msg.Header.Set(hdr, seal)
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	return h, say
}

// sentTask waits until d has sent a task and returns it: a hostile
// worker given the task holds its key.
func sentTask(ctx context.Context, t *testing.T, d *Dispatcher) *remote {
	t.Helper()
	for {
		d.mu.Lock()
		for _, r := range d.tasks {
			d.mu.Unlock()
			return r
		}
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatal("the task was never sent")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pairRegistry holds execute_command and write_file as propose/execute
// pairs whose handlers do nothing, and manage_todos, a single-phase
// low-risk tool with a schema.
func pairRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	h := func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("x") }
	reg, err := tools.NewRegistry(
		tools.Tool{Name: "execute_command", Level: messages.LevelUnknown, Twin: "execute_execute_command", Handler: h},
		tools.Tool{Name: "execute_execute_command", Level: messages.LevelUnknown, Hidden: true, Handler: h},
		tools.Tool{Name: "write_file", Level: messages.LevelLowRisk, Twin: "execute_write_file", Handler: h},
		tools.Tool{Name: "execute_write_file", Level: messages.LevelLowRisk, Hidden: true, Handler: h},
		tools.Tool{Name: "manage_todos", Level: messages.LevelLowRisk, Handler: h,
			Schema: json.RawMessage(`{"type":"object","required":["todos"],"properties":{"todos":{"type":"array"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// poolBus is a fresh embedded JetStream server, a bus on it with the
// pool's streams made, and a context that ends after timeout (or with the
// test).
func poolBus(t *testing.T, timeout time.Duration) (context.Context, *testutil.NATS, *bus.Bus) {
	t.Helper()
	srv := testutil.StartNATS(t, testutil.NATSOptions{JetStream: true})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	b, err := bus.Start(ctx, bus.Options{InProcess: srv.Server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.CloseNow)
	if err := workstore.Ensure(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	return ctx, srv, b
}

package workerpool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
	"github.com/jazz-run/jazz/workstore"
)

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

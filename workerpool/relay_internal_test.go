package workerpool

import (
	"context"
	"testing"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

// TestRelayCarriesTheTraceInHeaders: a task's events reach the runner
// with their trace context in the NATS headers, as every bus.Publish
// does, not only inside the body (the relay used to publish the body
// alone, so a header-reading subscriber saw no trace).
func TestRelayCarriesTheTraceInHeaders(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Start(ctx, bus.Options{InProcess: srv.Server})
	if err != nil {
		t.Fatal(err)
	}
	defer b.CloseNow()
	got := make(chan bus.Msg[messages.WorkEvent], 1)
	sub, err := bus.Subscribe(ctx, b, "jazz.work.>", func(m bus.Msg[messages.WorkEvent]) { got <- m }, bus.Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	j := &job{w: &Worker{o: WorkerOptions{Conn: b, Key: "wkey"}}, attempt: 1,
		task: messages.WorkTask{TaskID: "t1", Pool: "default", Place: messages.Place{RunID: "r1"}}}
	trace := messages.Trace{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	if err := (relay{j}).Publish("", messages.Event{Type: messages.EventRunEnd}, trace); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.Trace["traceparent"] != trace["traceparent"] || m.Header.Get("traceparent") != trace["traceparent"] {
			t.Fatalf("headers %v, trace %v: want traceparent %s", m.Header, m.Trace, trace["traceparent"])
		}
		if m.Value.Seq != 1 || m.Value.Trace["traceparent"] != trace["traceparent"] {
			t.Fatalf("body %+v", m.Value)
		}
	case <-ctx.Done():
		t.Fatal("the event never arrived")
	}
}

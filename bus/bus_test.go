package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/messages"
)

func TestEmbeddedRoundTripAndCleanShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Embedded() {
		t.Fatal("expected an embedded server")
	}
	got := make(chan messages.ApprovalDecided, 1)
	sub, err := b.Conn().Subscribe(messages.ApprovalDecidedSubject("r1"), func(m *nats.Msg) {
		d, err := messages.Decode[messages.ApprovalDecided](m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		if m.Header.Get("traceparent") == "" {
			t.Error("trace carrier not in headers")
		}
		got <- d
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	want := messages.ApprovalDecided{Place: messages.Place{RunID: "r1"}, ToolCallID: "call_1", Approved: true, DecidedBy: messages.DecidedByRemote}
	if err := b.Publish(messages.ApprovalDecidedSubject("r1"), want, messages.Trace{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.ToolCallID != want.ToolCallID || !d.Approved || d.DecidedBy != want.DecidedBy {
			t.Fatalf("got %+v", d)
		}
	case <-ctx.Done():
		t.Fatal("message not delivered")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestExternalURLUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{URL: "nats://127.0.0.1:1"})
	if err == nil {
		t.Fatal("expected an error for an unreachable server")
	}
}

func BenchmarkEmbeddedStartStop(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		bs, err := Start(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = bs.Close(ctx)
	}
}

func TestEmbeddedBusStartsOnFirstUse(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	b := New(Options{})
	// Nobody subscribed, so a publish needs no server.
	if err := b.Publish("jazz.run.x.event.status", messages.Event{Type: "status"}, nil); err != nil {
		t.Fatal(err)
	}
	if b.Conn() != nil {
		t.Fatal("publishing with no listener started the server")
	}
	conn, err := b.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1)
	sub, err := conn.Subscribe("jazz.run.x.event.>", func(*nats.Msg) { got <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := b.Publish("jazz.run.x.event.status", messages.Event{Type: "status"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered once started")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

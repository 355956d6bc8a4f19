package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/jazz-run/jazz/messages"
)

const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// noLeaks checks, once the test and its cleanups are done, that nothing
// it started is still running.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func startBus(t *testing.T) *Bus {
	t.Helper()
	b := New(Options{})
	t.Cleanup(func() {
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := b.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return b
}

// recv takes one value from c or fails the test after d.
func recv[T any](t *testing.T, c <-chan T, d time.Duration) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(d):
		t.Fatalf("nothing received within %s", d)
	}
	var zero T
	return zero
}

// TestSubscribeDecodesInOrderWithTrace: typed values arrive in publish
// order, with the trace Publish put in the headers; a body that does not
// decode is dropped, never handed over half-filled.
func TestSubscribeDecodesInOrderWithTrace(t *testing.T) {
	noLeaks(t)
	b := startBus(t)
	ctx := context.Background()
	got := make(chan Msg[messages.ApprovalDecided], 16)
	sub, err := Subscribe(ctx, b, messages.ApprovalDecidedSubject("r"), func(m Msg[messages.ApprovalDecided]) { got <- m }, Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	for i, id := range []string{"c1", "c2", "c3"} {
		var trace messages.Trace
		if i == 1 {
			trace = messages.Trace{"traceparent": tp}
		}
		if err := b.Publish(messages.ApprovalDecidedSubject("r"), messages.ApprovalDecided{ToolCallID: id}, trace); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Garbage between two good messages: dropped.
			if err := b.Conn().Publish(messages.ApprovalDecidedSubject("r"), []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, want := range []string{"c1", "c2", "c3"} {
		m := recv(t, got, 5*time.Second)
		if m.Value.ToolCallID != want {
			t.Fatalf("message %d is %q, want %q", i, m.Value.ToolCallID, want)
		}
		if hasTrace := m.Trace["traceparent"] == tp; hasTrace != (i == 1) {
			t.Fatalf("message %d trace %v", i, m.Trace)
		}
	}
	select {
	case m := <-got:
		t.Fatalf("unexpected extra message %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestHeaderTraceIgnoresCase: NATS header keys are case-sensitive, but a
// peer in another language that wrote "Traceparent" still joins; the
// lower-case key wins when both are present.
func TestHeaderTraceIgnoresCase(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    nats.Header
		want string
	}{
		{"lower", nats.Header{"traceparent": {tp}}, tp},
		{"capitalised", nats.Header{"Traceparent": {tp}}, tp},
		{"both, lower wins", nats.Header{"Traceparent": {"other"}, "traceparent": {tp}}, tp},
		{"none", nats.Header{"X-Other": {"v"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headerTrace(tc.h)["traceparent"]; got != tc.want {
				t.Fatalf("traceparent = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHandlerPanicIsReported: a panic in a handler would end the process
// (it runs on a NATS goroutine); it is recovered, reported, and the
// subscription keeps delivering.
func TestHandlerPanicIsReported(t *testing.T) {
	noLeaks(t)
	b := startBus(t)
	ctx := context.Background()
	reasons := make(chan string, 4)
	got := make(chan string, 4)
	sub, err := Subscribe(ctx, b, "jazz.test", func(m Msg[string]) {
		if m.Value == "boom" {
			panic("handler exploded")
		}
		got <- m.Value
	}, OnPanic(func(r string) { reasons <- r }), Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	for _, v := range []string{"boom", "after"} {
		if err := b.Publish("jazz.test", v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := recv(t, reasons, 5*time.Second); !strings.Contains(r, "handler exploded") {
		t.Fatalf("reason %q", r)
	}
	if v := recv(t, got, 5*time.Second); v != "after" {
		t.Fatalf("got %q after the panic", v)
	}
}

// fakeEngine records what Forward sends.
type fakeEngine struct{ sent chan any }

func (f fakeEngine) Send(pid string, msg any) { f.sent <- [2]any{pid, msg} }

func TestForwardSendsToTheActor(t *testing.T) {
	b := startBus(t)
	e := fakeEngine{sent: make(chan any, 1)}
	sub, err := Forward(context.Background(), b, messages.PolicySubject("r"), e, "gate-pid",
		func(m Msg[messages.PolicyChanged]) messages.PolicyChanged {
			m.Value.Policy += "!"
			return m.Value
		}, Registered())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	if err := b.Publish(messages.PolicySubject("r"), messages.PolicyChanged{Policy: "low-risk"}, nil); err != nil {
		t.Fatal(err)
	}
	got := recv(t, e.sent, 5*time.Second).([2]any)
	if got[0] != "gate-pid" || got[1].(messages.PolicyChanged).Policy != "low-risk!" {
		t.Fatalf("sent %v", got)
	}
}

package events_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/internal/testutil"
	"github.com/jazz-run/jazz/messages"
)

// An event larger than the shared bus takes (a tool's long result) is
// not lost without a sign: watchers of the bus get a small
// event_dropped naming it, its call and why, and the run's user a
// warning.
func TestEventTooLargeForTheBusIsReportedNotLostSilently(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{Configure: func(o *server.Options) { o.MaxPayload = 4096 }})
	runner := bus.Wrap(srv.Conn(t))
	watcher := srv.Conn(t)
	got := make(chan messages.Event, 16)
	sub, err := watcher.Subscribe(messages.RunSubject("run-1")+".event.>", func(m *nats.Msg) {
		var ev messages.Event
		if err := json.Unmarshal(m.Data, &ev); err == nil {
			got <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warned []string
	em := events.NewEmitter(runner, "run-1").WithDropped(func(msg string) {
		mu.Lock()
		warned = append(warned, msg)
		mu.Unlock()
	})
	result := strings.Repeat("r", 8192)
	em.Emit(messages.Event{Type: messages.EventToolExecutionComplete, Place: messages.Place{RunID: "run-1", ToolCallID: "call_7"},
		ToolName: "read_file", Result: &result, Success: messages.Ptr(true)})
	select {
	case ev := <-got:
		if ev.Type != messages.EventDropped || ev.Dropped != messages.EventToolExecutionComplete || ev.ToolCallID != "call_7" || ev.ToolName != "read_file" {
			t.Fatalf("the watcher got %+v, want an event_dropped for call_7's tool_execution_complete", ev)
		}
		if !strings.Contains(ev.Message, "4096") {
			t.Errorf("the event_dropped does not say the limit: %q", ev.Message)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher heard nothing: the event was dropped with no sign")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], "call_7") || !strings.Contains(warned[0], "not published") {
		t.Fatalf("warnings %q, want one naming call_7", warned)
	}
}

// A warning too large for the bus is stood in for on the bus, but not
// warned about again: the warning itself reached the run's user.
func TestDroppedWarningIsNotWarnedAgain(t *testing.T) {
	srv := testutil.StartNATS(t, testutil.NATSOptions{Configure: func(o *server.Options) { o.MaxPayload = 4096 }})
	em := events.NewEmitter(bus.Wrap(srv.Conn(t)), "run-1").WithDropped(func(msg string) { t.Errorf("warned again: %s", msg) })
	em.Emit(messages.Event{Type: messages.EventWarning, Message: strings.Repeat("w", 8192)})
}

package events_test

import (
	"testing"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/messages"
)

// The bus is an Idler: a plain run's emitter asks it before each event.
var _ events.Idler = (*bus.Bus)(nil)

// counting counts what it is given; idle says whether it is listened to.
type counting struct {
	idle bool
	n    int
}

func (c *counting) Publish(string, any, messages.Trace) error { c.n++; return nil }
func (c *counting) Idle() bool                                { return c.idle }

// TestEmitSkipsAnIdlePublisher: an idle publisher is not handed events;
// once it is listened to, every event reaches it.
func TestEmitSkipsAnIdlePublisher(t *testing.T) {
	p := &counting{idle: true}
	em := events.NewEmitter(p, "r1")
	em.Emit(messages.Event{Type: messages.EventToolCall})
	if p.n != 0 {
		t.Fatalf("an idle publisher was handed %d events", p.n)
	}
	p.idle = false
	em.Emit(messages.Event{Type: messages.EventToolCall})
	em.Emit(messages.Event{Type: messages.EventToolCall})
	if p.n != 2 {
		t.Fatalf("a listened-to publisher got %d of 2 events", p.n)
	}
}

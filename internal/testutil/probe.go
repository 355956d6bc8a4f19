package testutil

import (
	"fmt"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
)

// Probe is an actor that records every message it receives (lifecycle
// messages aside), for tests that talk to actors: send with Probe.PID
// as the sender, then Expect what comes back.
type Probe struct {
	PID    *actor.PID
	engine *actor.Engine
	got    chan any
}

// probeBuffer is how many unread messages a probe keeps; past it the
// probe's actor blocks, which a test sees as a missed expectation.
const probeBuffer = 1024

// NewProbe spawns a probe on engine; it is poisoned in the cleanup. on,
// when set, is also called with each message, inside the actor (to
// reply or forward).
func NewProbe(t testing.TB, engine *actor.Engine, name string, on func(*actor.Context)) *Probe {
	t.Helper()
	p := &Probe{engine: engine, got: make(chan any, probeBuffer)}
	p.PID = engine.SpawnFunc(func(c *actor.Context) {
		switch c.Message().(type) {
		case actor.Initialized, actor.Started, actor.Stopped:
			return
		}
		if on != nil {
			on(c)
		}
		p.got <- c.Message()
	}, name)
	t.Cleanup(func() {
		select {
		case <-engine.Poison(p.PID).Done():
		case <-time.After(readyTimeout):
			t.Errorf("probe %s did not stop within %s", name, readyTimeout)
		}
	})
	return p
}

// Expect waits up to within for a message of type T that match accepts
// (nil accepts any), skipping others, and fails the test when none comes.
func Expect[T any](t testing.TB, p *Probe, within time.Duration, match func(T) bool) T {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	var skipped []string
	for {
		select {
		case m := <-p.got:
			if v, ok := m.(T); ok && (match == nil || match(v)) {
				return v
			}
			if len(skipped) < 8 {
				skipped = append(skipped, fmt.Sprintf("%T", m))
			}
		case <-deadline.C:
			var zero T
			t.Fatalf("no %T within %s (skipped: %v)", zero, within, skipped)
			return zero
		}
	}
}

package app

import (
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
)

// TestSmallInboxGrows pins what the run's actors rely on when they are
// spawned with an inbox of 16 slots instead of hollywood's 1024: a burst
// far bigger than the inbox, sent while the actor is busy, is neither
// dropped nor blocked, and arrives in order. A hollywood whose inbox
// stopped growing would fail here, not in a run that lost a message.
func TestSmallInboxGrows(t *testing.T) {
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	const burst = 5000
	release := make(chan struct{})
	got := make(chan int, burst)
	pid := engine.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case string: // the first message holds the actor until the burst is in
			<-release
		case int:
			got <- m
		}
	}, "small", actor.WithInboxSize(16))
	engine.Send(pid, "hold")
	sent := make(chan struct{})
	go func() {
		for i := range burst {
			engine.Send(pid, i)
		}
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("Send blocked on a full inbox")
	}
	close(release)
	deadline := time.After(10 * time.Second)
	for want := range burst {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("message %d arrived as %d", want, n)
			}
		case <-deadline:
			t.Fatalf("%d of %d messages arrived", want, burst)
		}
	}
	<-engine.Poison(pid).Done()
}

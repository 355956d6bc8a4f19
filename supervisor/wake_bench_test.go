package supervisor_test

import (
	"testing"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
)

// ball is passed between two actors; n counts the passes left.
type ball struct {
	n    int
	done chan struct{}
}

type player struct{ other *actor.PID }

func (p *player) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case *actor.PID:
		p.other = m
	case ball:
		if m.n == 0 {
			close(m.done)
			return
		}
		m.n--
		c.Send(p.other, m)
	}
}

// BenchmarkIdleActorWake is what one message to an idle jazz actor costs
// (hollywood v1.0.5 starts a goroutine for it, which Recover's growStack
// grows once): two actors pass a ball, so every message finds its
// receiver idle. A tool call is three such wakes (its call actor twice,
// its agent once), the floor under the runtime's cost per call.
func BenchmarkIdleActorWake(b *testing.B) {
	b.Run("recover", func(b *testing.B) { benchWake(b, true) })
	// Without the middleware: a bare hollywood actor, whose stack grows
	// by doubling wherever the handling needs it.
	b.Run("bare", func(b *testing.B) { benchWake(b, false) })
}

func benchWake(b *testing.B, recovered bool) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		b.Fatal(err)
	}
	spawn := func(name string) *actor.PID {
		var opts []actor.OptFunc
		if recovered { // one Recover per spawn: it holds the actor's state
			opts = append(opts, actor.WithMiddleware(supervisor.Recover(messages.Place{}, nil)))
		}
		return e.Spawn(func() actor.Receiver { return &player{} }, name, opts...)
	}
	x, y := spawn("x"), spawn("y")
	e.Send(x, y)
	e.Send(y, x)
	const passes = 1000
	b.ReportAllocs()
	for b.Loop() {
		done := make(chan struct{})
		e.Send(x, ball{n: passes, done: done})
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*passes), "ns/wake")
	<-e.Poison(x).Done()
	<-e.Poison(y).Done()
}

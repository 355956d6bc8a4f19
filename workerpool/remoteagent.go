package workerpool

import (
	"context"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
)

// RemoteAgent is the producer of a top-level agent whose loop runs on a
// worker of d's pool (`jazz run --remote`). It stands where the local
// agent would, under the run's root: the root's gate decides its gated
// calls, its events join the run's stream, its spend the run's ledger,
// and a CancelRun from the root (a signal, --timeout) cancels it on the
// worker. c.Config is the agent's config; the prompt, history and trace
// come with RunRequested.
func RemoteAgent(d *Dispatcher, c actors.ChildRun) actor.Producer {
	return func() actor.Receiver { return &remoteAgent{d: d, run: c} }
}

type remoteAgent struct {
	d      *Dispatcher
	run    actors.ChildRun
	parent *actor.PID
	cancel context.CancelFunc
	done   bool
}

// remoteDone brings the remote run's outcome back into the actor.
type remoteDone struct{ o actors.ChildOutcome }

// Receive starts the remote run and reports its end.
func (a *remoteAgent) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case messages.RunRequested:
		if a.cancel != nil {
			return
		}
		a.parent = c.Sender()
		if a.parent == nil {
			a.parent = c.Parent()
		}
		base := a.run.Config.Ctx
		if base == nil {
			base = context.Background()
		}
		ctx, cancel := context.WithCancel(base)
		a.cancel = cancel
		run := a.run
		run.Prompt, run.History, run.Trace = m.Prompt, m.History, m.Trace.Clone()
		engine, self := c.Engine(), c.PID()
		go func() { engine.Send(self, remoteDone{a.d.Run(ctx, messages.TaskRun, run)}) }()
	case remoteDone:
		if a.done {
			return
		}
		a.done = true
		f := m.o.Finished
		f.Place = a.run.Config.Place
		f.OK = m.o.Kind == "" && f.OK
		if !f.OK && f.Error == "" {
			f.Error = m.o.Reason
		}
		c.Send(a.parent, f)
	case messages.CancelRun:
		if a.cancel != nil {
			a.cancel()
		}
	case actor.Stopped:
		if a.cancel != nil {
			a.cancel()
		}
	}
}

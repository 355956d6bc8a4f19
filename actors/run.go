package actors

import (
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/events"
	"github.com/jazz-run/jazz/ledger"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
)

// DefaultTeardownBudget is how long a run that is stopped (a signal, its
// timeout, a crash) gives its agent to hand back what it has (the partial
// answer, the spend of its calls and subagents) before the run ends
// without it. It is the one bound on a stop: every wait below it runs
// inside it, at the same time.
const DefaultTeardownBudget = 2 * time.Second

// RunConfig is the root of one run: the actor that owns the run's gate
// and agent, hears of every crash in the tree and decides the outcome.
type RunConfig struct {
	Place messages.Place
	// Gate is the producer of the run's approval gate.
	Gate actor.Producer
	// Agent makes the top-level agent once the gate and the root exist;
	// the agent reports crashes below it to root.
	Agent func(gate, root *actor.PID) actor.Producer
	// Request is sent to the agent to start the run.
	Request messages.RunRequested
	// Budget bounds a stop; 0 means DefaultTeardownBudget.
	Budget time.Duration
	// Events carries the run's one recoverable:false error event when it
	// fails.
	Events *events.Emitter
	// Bus publishes RunFinished on the run's finished subject; nil
	// publishes nothing.
	Bus events.Publisher
	// Ledger is the run tree's account: the outcome's usage, cost and
	// calls are its totals, whole however the run ends (a child still
	// running at a timeout included). Nil keeps the agent's report.
	Ledger *ledger.Ledger
	// Finished is told the outcome, exactly once, from the root's
	// goroutine, after the error event and RunFinished were published.
	Finished func(RunOutcome)
	// FailOn, when set, is asked about a run that ended well; a non-empty
	// answer fails it with that message (the CLI's --fail-on-decline and
	// --fail-on-max-iterations), so the outcome, its run_end event and
	// the exit code agree.
	FailOn func(messages.RunFinished) string
}

// RunOutcome is how a run ended.
type RunOutcome struct {
	messages.RunFinished
	// Cause is why the run was stopped before it finished on its own
	// (messages.Cause*), empty when it did.
	Cause string
}

// budgetSpent is the root's teardown timer going off.
type budgetSpent struct{}

// Run is the root actor of a run.
type Run struct {
	cfg   RunConfig
	gate  *actor.PID
	agent *actor.PID
	// stopping is why the run is being stopped; cause its kind.
	stopping string
	cause    string
	timer    *time.Timer
	done     bool
}

// NewRun is the Producer of a run's root actor.
func NewRun(cfg RunConfig) actor.Producer {
	return func() actor.Receiver { return &Run{cfg: cfg} }
}

// Receive runs the run.
func (r *Run) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		// Both are children: they never stop themselves (a crash leaves a
		// tombstone, see supervisor.Recover), so the root's own stop is
		// the only one that stops them, and it waits for both.
		r.gate = c.SpawnChild(r.cfg.Gate, "gate", actor.WithID("gate"),
			actor.WithMiddleware(supervisor.Recover(r.cfg.Place, nil)), actor.WithInboxSize(childInbox))
		r.agent = c.SpawnChild(r.cfg.Agent(r.gate, c.PID()), "agent", actor.WithID("top"),
			actor.WithMiddleware(supervisor.Recover(r.cfg.Place, nil)), actor.WithInboxSize(childInbox))
		c.Send(r.agent, r.cfg.Request)
	case messages.RunFinished:
		if r.done || !is(c.Sender(), r.agent) {
			return
		}
		r.finish(c, m)
	case messages.ActorFailed:
		r.failed(c, m)
	case messages.CancelRun:
		cause := m.Cause
		if cause == "" {
			cause = messages.CauseCancelled
		}
		r.stop(c, m.Reason, cause)
	case budgetSpent:
		if !r.done {
			// The agent did not hand back in time: end without it.
			r.finish(c, messages.RunFinished{Place: r.cfg.Place})
		}
	case messages.ApprovalDecided, messages.PolicyChanged:
		// Whoever may answer (the bus wiring, the Go API) reaches the gate
		// through the root, which alone knows it.
		if r.gate != nil && !r.done {
			c.Send(r.gate, m)
		}
	case actor.Stopped:
		if r.timer != nil {
			r.timer.Stop()
		}
	}
}

// failed is a crash somewhere in the tree, reported by a child (the gate,
// the agent) or escalated from below (a call actor, a subagent, the sink).
func (r *Run) failed(c *actor.Context, m messages.ActorFailed) {
	if r.done {
		return
	}
	role := m.Role
	switch {
	case role != "":
	case is(c.Sender(), r.gate):
		role = messages.RoleGate
	case is(c.Sender(), r.agent):
		role = messages.RoleAgent
	}
	if supervisor.Decide(supervisor.RunSpec(), supervisor.ChildFailure{Kind: supervisor.FailPanic, Reason: m.Reason}) != supervisor.Escalate {
		return
	}
	reason := crashMessage(role, m.Reason)
	if role == messages.RoleAgent {
		// Nobody is left to hand anything back.
		r.stopping, r.cause = reason, messages.CauseCrash
		if r.gate != nil {
			c.Send(r.gate, messages.CancelRun{Place: r.cfg.Place, Reason: reason, Cause: messages.CauseCrash})
		}
		r.finish(c, messages.RunFinished{Place: r.cfg.Place})
		return
	}
	r.stop(c, reason, messages.CauseCrash)
}

// crashMessage words a crash for the person reading the run's error.
func crashMessage(role, reason string) string {
	switch role {
	case messages.RoleGate:
		return "The approval gate crashed: " + reason
	case messages.RoleAgent:
		return "The agent crashed: " + reason
	case messages.RoleSink:
		return "The event stream crashed: " + reason
	}
	return reason // call actors and subagents word their own
}

// stop starts the one teardown of the run: the gate declines what waits
// for it, the agent hands back what it has, and the budget bounds both.
// The first reason wins.
func (r *Run) stop(c *actor.Context, reason, cause string) {
	if r.done || r.stopping != "" {
		return
	}
	r.stopping, r.cause = reason, cause
	cancel := messages.CancelRun{Place: r.cfg.Place, Reason: reason, Cause: cause}
	c.Send(r.gate, cancel)
	c.Send(r.agent, cancel)
	budget := r.cfg.Budget
	if budget <= 0 {
		budget = DefaultTeardownBudget
	}
	engine, self := c.Engine(), c.PID()
	r.timer = time.AfterFunc(budget, func() { engine.Send(self, budgetSpent{}) })
}

// finish publishes the outcome: the error event of a failed run, then
// RunFinished on the run's subject (last, so a reader of the run's
// subjects knows its stream ended), then Finished.
func (r *Run) finish(c *actor.Context, f messages.RunFinished) {
	r.done = true
	if r.timer != nil {
		r.timer.Stop()
	}
	f.Place = r.cfg.Place
	if t, ok := totals(r.cfg.Ledger); ok {
		f.Usage, f.CostUSD, f.CostKnown, f.ToolCalls, f.Declined = t.Usage, t.CostUSD, t.CostKnown, t.ToolCalls, t.Declined
	}
	if r.stopping != "" {
		f.OK = false
		f.Error = r.stopping
	} else if !f.OK && f.Error == "" {
		f.Error = "The run failed."
	}
	f.StopReason = messages.StopReasonOf(f, r.cause)
	if f.OK && r.cfg.FailOn != nil {
		if msg := r.cfg.FailOn(f); msg != "" {
			f.OK, f.Error = false, msg
		}
	}
	if !f.OK && f.StopReason != messages.StopInterrupted {
		// error events are always sent: a failure is never invisible on
		// the live stream, whatever categories were chosen. An interrupt
		// is the caller's own doing, not a failure: run_end says it.
		r.cfg.Events.Emit(messages.Event{Type: messages.EventErrorType, Place: r.cfg.Place,
			Err: &messages.EventError{Name: errorName(r.cause), Message: f.Error}, Recoverable: messages.Ptr(false)})
	}
	r.cfg.Events.Emit(RunEnd(f))
	if r.cfg.Bus != nil {
		pub := f
		pub.Transcript = nil // the conversation stays with the caller
		_ = r.cfg.Bus.Publish(messages.FinishedSubject(r.cfg.Place.RunID), pub, f.Trace)
	}
	if r.cfg.Finished != nil {
		r.cfg.Finished(RunOutcome{RunFinished: f, Cause: r.cause})
	}
}

// RunEnd is the run_end event of a run that ended as f: the last event
// of every run's stream.
func RunEnd(f messages.RunFinished) messages.Event {
	u := f.Usage
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	ev := messages.Event{Type: messages.EventRunEnd, Place: f.Place, OK: messages.Ptr(f.OK), StopReason: f.StopReason,
		CostUSD: messages.Ptr(f.CostUSD), CostKnown: messages.Ptr(f.CostKnown), Usage: &u}
	if !f.OK {
		ev.ErrorText = f.Error
	}
	return ev
}

// totals is the account's, false without one or when pricing it panics:
// the root must publish its outcome whatever a pricer does.
func totals(l *ledger.Ledger) (t ledger.Totals, ok bool) {
	if l == nil {
		return t, false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return l.Totals(), true
}

// errorName names the kind of failure in the run's error event.
func errorName(cause string) string {
	switch cause {
	case messages.CauseTimeout:
		return "TimeoutError"
	case messages.CauseCancelled:
		return "CancelledError"
	}
	return "RunError"
}

func is(a, b *actor.PID) bool {
	return a != nil && b != nil && a.ID == b.ID && a.Address == b.Address
}

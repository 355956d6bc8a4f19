// Package supervisor keeps failures contained: every jazz actor is spawned
// with Recover, so a panic becomes a reported failure instead of a restart
// loop that hollywood v1.0.5 ends by crashing the whole process; and every
// goroutine an actor starts for slow work runs under Go, which does the
// same for panics off the actor's own goroutine. The subagent supervision
// spec (decide what to do when a child fails) lives here too.
package supervisor

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
)

// Failure is what Recover hands to its report func.
type Failure struct {
	Actor  string
	Reason string
	Stack  string
}

// Recover is the middleware every jazz actor is spawned with; call it once
// per spawn, since it holds that actor's state. A panic in Receive is
// reported to the actor's parent as messages.ActorFailed (or to report,
// when given), so the engine never sees it (hollywood v1.0.5 would restart
// the actor, and past MaxRestarts crash the process).
//
// The failed actor is not stopped here: it becomes a tombstone that drops
// every later message except Stopped, until whoever owns it stops it (its
// parent, or the actor that spawned it on the engine). Stopping itself
// would race its owner's stop, and hollywood v1.0.5 never acknowledges a
// second poison pill, hanging the owner's shutdown.
func Recover(place messages.Place, report func(c *actor.Context, f Failure)) actor.MiddlewareFunc {
	r := &recoverer{place: place, report: report}
	receive := r.receive // bound once: hollywood v1.0.5 re-applies middleware to every message
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		// hollywood applies the middleware and calls what it returns at once,
		// on the actor's own goroutine (Start's messages before its inbox
		// runs), so next is never swapped while a message is in hand.
		r.next = next
		return receive
	}
}

// recoverer is one actor's Recover state.
type recoverer struct {
	place  messages.Place
	report func(c *actor.Context, f Failure)
	failed atomic.Bool
	next   actor.ReceiveFunc
}

func (r *recoverer) receive(c *actor.Context) {
	_, stopping := c.Message().(actor.Stopped)
	if r.failed.Load() && !stopping {
		return
	}
	defer func() {
		v := recover()
		if v == nil || stopping {
			return // a panic while going away has nothing left to stop
		}
		r.failed.Store(true)
		f := Failure{Actor: c.PID().String(), Reason: fmt.Sprint(v), Stack: string(debug.Stack())}
		if r.report != nil {
			r.report(c, f)
		} else if parent := c.Parent(); parent != nil {
			c.Send(parent, messages.ActorFailed{Place: r.place, Actor: f.Actor, Reason: f.Reason})
		}
	}()
	r.next(c)
}

// Go runs fn on a new goroutine; a panic in it is turned into a call of
// onPanic with the reason, so slow work started by an actor cannot take the
// process down.
func Go(fn func(), onPanic func(reason string)) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				onPanic(fmt.Sprint(v))
			}
		}()
		fn()
	}()
}

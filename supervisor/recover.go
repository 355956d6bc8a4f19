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

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
)

// Failure is what Recover hands to its report func.
type Failure struct {
	Actor  string
	Reason string
	Stack  string
}

// Recover is the middleware every jazz actor is spawned with. A panic in
// Receive is reported to the actor's parent as messages.ActorFailed (or to
// report, when given) and the actor is stopped, so the engine never sees it.
func Recover(place messages.Place, report func(c *actor.Context, f Failure)) actor.MiddlewareFunc {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				f := Failure{Actor: c.PID().String(), Reason: fmt.Sprint(v), Stack: string(debug.Stack())}
				if _, stopping := c.Message().(actor.Stopped); stopping {
					return // already going away; nothing left to stop
				}
				if report != nil {
					report(c, f)
				} else if parent := c.Parent(); parent != nil {
					c.Send(parent, messages.ActorFailed{Place: place, Actor: f.Actor, Reason: f.Reason})
				}
				c.Engine().Poison(c.PID())
			}()
			next(c)
		}
	}
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

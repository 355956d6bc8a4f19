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
	"sync"
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
	growStack(-1)
	r.next(c)
}

// stackFrame is the frame growStack claims: with what hollywood's frames
// below it already use, it takes a fresh goroutine's stack to 16 KB in one
// step.
const stackFrame = 12 << 10

// growStack makes sure the goroutine has stackFrame bytes of stack free,
// so a message's handling never grows it. hollywood v1.0.5 starts a new
// goroutine (2 KB of stack) for each burst of messages to an idle actor;
// left alone, its stack is grown by doubling deep inside the handling,
// and every growth copies the stack and walks all its frames, which cost
// a third of a tool call's CPU. Growing it here, where the stack is
// shallow, is one cheap copy per goroutine; once grown, the call is the
// frame check only. i is always negative, so buf is never touched and
// never zeroed: it is there to size the frame.
//
//go:noinline
func growStack(i int) byte {
	if i < 0 {
		return 0
	}
	var buf [stackFrame]byte
	buf[0] = byte(i)
	return buf[i%stackFrame]
}

// Go runs fn on a new goroutine; a panic in it is turned into a call of
// onPanic with the reason, so slow work started by an actor cannot take the
// process down. The goroutine's stack is grown once before fn runs, as an
// actor's is (see growStack): this is where a tool handler or a model call
// runs, and JSON decoding, file and HTTP work would otherwise grow a 2 KB
// stack by doubling from deep inside.
func Go(fn func(), onPanic func(reason string)) {
	go func() {
		growStack(-1)
		defer func() {
			if v := recover(); v != nil {
				onPanic(fmt.Sprint(v))
			}
		}()
		fn()
	}()
}

// Runner is work for a Worker: Run on the worker's goroutine, Panicked
// with the reason if Run panics.
type Runner interface {
	Run()
	Panicked(reason string)
}

// Worker runs Runners off the actor that owns it, on a goroutine it keeps
// between them. A tool call actor takes call after call, and a fresh
// goroutine per handler was a goroutine's start, a stack growth (see
// growStack) and an exit per call; a parked one is a channel handoff.
// A Runner never waits for another: when the parked goroutine is busy (a
// handler that outlived its call's timeout), Run starts a new one, which
// parks in turn. Close ends the parked goroutines; the owner calls it when
// it stops. A Worker holds no reference to a Runner once it returns.
type Worker struct {
	work chan Runner
	done chan struct{}
	once sync.Once
}

// NewWorker returns a Worker with no goroutine yet: the first Run starts it.
func NewWorker() *Worker {
	return &Worker{work: make(chan Runner), done: make(chan struct{})}
}

// Run runs r on a parked goroutine of w, or on a new one.
func (w *Worker) Run(r Runner) {
	select {
	case w.work <- r: // unbuffered: taken only by a goroutine parked in loop
	default:
		go w.loop(r)
	}
}

// Close ends w's parked goroutines; a Runner still running finishes first.
func (w *Worker) Close() { w.once.Do(func() { close(w.done) }) }

func (w *Worker) loop(r Runner) {
	growStack(-1)
	for {
		runRecovered(r)
		r = nil // parked, the goroutine keeps nothing of the call alive
		select {
		case r = <-w.work:
		case <-w.done:
			return
		}
	}
}

func runRecovered(r Runner) {
	defer func() {
		if v := recover(); v != nil {
			r.Panicked(fmt.Sprint(v))
		}
	}()
	r.Run()
}

// Package faults injects crashes into a run, for the tests that prove a
// crash anywhere in the run tree fails the run promptly and leaves
// nothing behind. A Plan names the parts that crash; real runs carry a
// nil Plan, which injects nothing.
package faults

import (
	"fmt"

	"github.com/anthdm/hollywood/actor"
)

// Plan says which parts of a run panic. Each panics on the first message
// of its kind it handles, and keeps doing so for every new actor of that
// kind.
type Plan struct {
	// Gate panics on its first approval request.
	Gate bool
	// Agent (the top-level one) panics on its RunRequested.
	Agent bool
	// Call actors panic on their ToolCallRequested.
	Call bool
	// Subagent agents panic on their RunRequested.
	Subagent bool
	// Sink panics on the first event it renders.
	Sink bool
	// Fired, when set, is told what is about to crash, just before the
	// panic: the fault tests time the run's end from it.
	Fired func(what string)
}

// crash panics, naming what, after telling p.Fired.
func (p *Plan) crash(what string) {
	if p != nil && p.Fired != nil {
		p.Fired(what)
	}
	panic(fmt.Sprintf("injected fault in the %s", what))
}

// Wrap returns prod unchanged unless on (a field of plan); else a
// producer whose actors panic, naming what, on the first message of type
// T they receive.
func Wrap[T any](prod actor.Producer, plan *Plan, on bool, what string) actor.Producer {
	if !on {
		return prod
	}
	return func() actor.Receiver { return &crasher[T]{next: prod(), plan: plan, what: what} }
}

type crasher[T any] struct {
	next actor.Receiver
	plan *Plan
	what string
}

func (c *crasher[T]) Receive(ctx *actor.Context) {
	if _, ok := ctx.Message().(T); ok {
		c.plan.crash(c.what)
	}
	c.next.Receive(ctx)
}

// Panic panics, naming what, when on: for code that is not an actor.
func Panic(plan *Plan, on bool, what string) {
	if on {
		plan.crash(what)
	}
}

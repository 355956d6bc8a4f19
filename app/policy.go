package app

import (
	"sync/atomic"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// policyDial mirrors the gate's approval policy for the tools that act on
// it themselves (the git tools refuse a hostile repository below
// high-risk). The gate owns the policy; the mirror is written only by the
// gate's own receiver, from the very PolicyChanged messages the gate
// receives, whoever sent them.
type policyDial struct{ v atomic.Pointer[string] }

func newPolicyDial(initial string) *policyDial {
	d := &policyDial{}
	d.v.Store(&initial)
	return d
}

// get is the policy now.
func (d *policyDial) get() string { return *d.v.Load() }

// policyFunc is the tools' view of it.
func (d *policyDial) policyFunc() tools.PolicyFunc { return d.get }

// watch wraps the gate's producer: each policy change is recorded on its
// way into the gate.
func (d *policyDial) watch(gate actor.Producer) actor.Producer {
	return func() actor.Receiver { return policyWatch{inner: gate(), dial: d} }
}

type policyWatch struct {
	inner actor.Receiver
	dial  *policyDial
}

func (w policyWatch) Receive(c *actor.Context) {
	if p, ok := c.Message().(messages.PolicyChanged); ok {
		w.dial.v.Store(&p.Policy)
	}
	w.inner.Receive(c)
}

package app

import (
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
)

func TestPolicyDialFollowsTheGate(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := newPolicyDial(messages.PolicyLowRisk)
	seen := make(chan string, 1)
	gate := func() actor.Receiver {
		return receiveFunc(func(c *actor.Context) {
			if p, ok := c.Message().(messages.PolicyChanged); ok {
				seen <- p.Policy
			}
		})
	}
	pid := e.Spawn(d.watch(gate), "gate")
	if got := d.policyFunc()(); got != messages.PolicyLowRisk {
		t.Fatalf("initial policy %q", got)
	}
	e.Send(pid, messages.PolicyChanged{Policy: messages.PolicyHighRisk})
	select {
	case p := <-seen:
		if p != messages.PolicyHighRisk || d.get() != messages.PolicyHighRisk {
			t.Fatalf("gate saw %q, mirror says %q", p, d.get())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate never received the change")
	}
}

type receiveFunc func(*actor.Context)

func (f receiveFunc) Receive(c *actor.Context) { f(c) }

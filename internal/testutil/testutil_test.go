package testutil_test

import (
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/internal/testutil"
)

// TestNATSBothWays: a listening server and a socketless one each carry a
// message from one connection to another.
func TestNATSBothWays(t *testing.T) {
	for _, listen := range []bool{true, false} {
		n := testutil.StartNATS(t, testutil.NATSOptions{Listen: listen})
		if (n.URL != "") != listen {
			t.Fatalf("listen=%v but URL %q", listen, n.URL)
		}
		a, b := n.Conn(t), n.Conn(t)
		sub, err := b.SubscribeSync("x")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := a.Publish("x", []byte("hi")); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil || string(m.Data) != "hi" {
			t.Fatalf("listen=%v: got %v, %v", listen, m, err)
		}
	}
}

type ping struct{ n int }
type pong struct{ n int }

// TestProbeExpect: the probe replies through its hook and Expect skips
// what does not match until what does.
func TestProbeExpect(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.NewProbe(t, e, "probe", func(c *actor.Context) {
		if m, ok := c.Message().(ping); ok && m.n > 0 {
			c.Send(c.PID(), pong{n: m.n})
		}
	})
	for i := 0; i < 3; i++ {
		e.Send(p.PID, ping{n: i})
	}
	if got := testutil.Expect(t, p, 5*time.Second, func(m pong) bool { return m.n == 2 }); got.n != 2 {
		t.Fatalf("got %+v", got)
	}
}

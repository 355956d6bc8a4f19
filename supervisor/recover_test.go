package supervisor_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
)

type boom struct{ n int }

// panicker panics on every boom it receives.
type panicker struct{ release <-chan struct{} }

func (p *panicker) Receive(c *actor.Context) {
	if b, ok := c.Message().(boom); ok {
		if b.n == 0 {
			<-p.release
		}
		panic("boom " + string(rune('0'+b.n)))
	}
}

// TestRecoverSurvivesRepeatedPanics: an actor sent five messages that
// each panic (more than hollywood's MaxRestarts of 3) reports the first
// failure to its parent and drops the rest as a tombstone; the process is
// still alive afterwards, and the parent can stop it.
func TestRecoverSurvivesRepeatedPanics(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	failures := runPanicker(t, e, true)
	if failures != 1 {
		t.Fatalf("%d ActorFailed reached the parent, want exactly one", failures)
	}
	// The engine still works: a fresh actor answers.
	got := make(chan struct{})
	pid := e.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			close(got)
		}
	}, "after")
	e.Send(pid, "ping")
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("engine stopped answering after the panics")
	}
}

// runPanicker sends five booms to a panicking child and returns how many
// failures its parent was told about within half a second of the first,
// after checking that the parent can then stop the failed child.
func runPanicker(t testing.TB, e *actor.Engine, withRecover bool) int {
	release := make(chan struct{})
	failed := make(chan messages.ActorFailed, 16)
	childc := make(chan *actor.PID, 1)
	place := messages.Place{RunID: "r", ToolCallID: "call_1"}
	e.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			var opts []actor.OptFunc
			if withRecover {
				opts = append(opts, actor.WithMiddleware(supervisor.Recover(place, nil)))
			}
			childc <- c.SpawnChild(func() actor.Receiver { return &panicker{release: release} }, "panicker", opts...)
		case messages.ActorFailed:
			failed <- m
		}
	}, "parent")
	child := <-childc
	for i := range 5 {
		e.Send(child, boom{n: i})
	}
	close(release)
	n := 0
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f := <-failed:
			n++
			if f.Place.ToolCallID != "call_1" || f.Reason != "boom 0" {
				t.Errorf("ActorFailed %+v", f)
			}
			timeout = time.After(500 * time.Millisecond)
		case <-timeout:
			if withRecover {
				select {
				case <-e.Poison(child).Done():
				case <-time.After(5 * time.Second):
					t.Error("the failed child did not stop when poisoned")
				}
			}
			return n
		}
	}
}

// TestWithoutRecoverTheProcessDies shows what Recover prevents: the same
// actor spawned without it makes hollywood v1.0.5 restart it until
// MaxRestarts and then take the whole process down. It runs in a child
// process so this test survives to check that.
func TestWithoutRecoverTheProcessDies(t *testing.T) {
	if os.Getenv("JAZZ_SUPERVISOR_CHILD") != "" {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			os.Exit(3)
		}
		runPanicker(t, e, os.Getenv("JAZZ_SUPERVISOR_CHILD") == "recover")
		time.Sleep(2 * time.Second) // restarts are 500 ms apart, 3 of them
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("spawns a child process and waits for hollywood's restarts")
	}
	for _, c := range []struct {
		mode     string
		wantDies bool
	}{{"recover", false}, {"bare", true}} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutRecoverTheProcessDies$", "-test.count=1")
			cmd.Env = append(os.Environ(), "JAZZ_SUPERVISOR_CHILD="+c.mode)
			out, err := cmd.CombinedOutput()
			died := err != nil
			if died != c.wantDies {
				t.Fatalf("%s: child died=%v (err %v), want %v\n%s", c.mode, died, err, c.wantDies, tail(string(out), 1500))
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

//go:build unix

package e2e

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// exitBound is how long a stopped jazz may take to exit before the test
// calls it hung. It is no timing claim: jazz bounds its own teardown (the
// root's 2 s budget, then 500 ms to close the bus, context deadlines
// inside the process), and what proves the teardown kept to it is the
// envelope: a root whose budget ran out ends without the agent, so its
// answer is empty, not the partial text.
const exitBound = 20 * time.Second

// TestInterruptKeepsThePartialAnswer: SIGINT while the model streams, or
// while a tool runs, ends `jazz run --json` within the teardown budget,
// exit 1, with a failure envelope (stop reason interrupted) whose answer
// is what the model wrote before the interrupt (agent-loop.md:
// interrupted runs keep their text), which only an agent that handed back
// before the budget ran out can give.
func TestInterruptKeepsThePartialAnswer(t *testing.T) {
	t.Parallel()
	sleep := chatserver.Call{Name: "execute_command", Arguments: chatserver.JSONArgs(map[string]string{"command": "sleep 30", "description": "wait"})}
	for _, tc := range []struct {
		name  string
		turn  chatserver.Turn
		when  string // the event after which SIGINT is sent (the whole partial streamed)
		extra []string
		want  string
	}{
		{"during a model stream", chatserver.Turn{Partial: "half an answer", Stall: true}, `"accumulated":"half an answer"`, nil, "half an answer"},
		{"during a tool", chatserver.Turn{Text: "working on it", Calls: []chatserver.Call{sleep}}, `"type":"tool_execution_start"`,
			[]string{"--auto-approve-tools", "execute_command"}, "working on it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := chatserver.New(tc.turn, chatserver.Turn{Text: "never"})
			defer srv.Close()
			e := hlNewEnv(t)
			e.chatAgent(srv, "i", nil, "execute_command")
			ready := make(chan struct{})
			var once sync.Once
			args := append([]string{"run", "--json", "--stream", "--events", "all", "--agent", "i"}, tc.extra...)
			p := e.start(hlRunOpts{args: append(args, "go"), onStderr: func(line string) {
				if strings.Contains(line, tc.when) {
					once.Do(func() { close(ready) })
				}
			}})
			select {
			case <-ready:
			case <-time.After(20 * time.Second):
				_ = p.cmd.Process.Kill()
				r := p.wait(5 * time.Second)
				t.Fatalf("no %s event within 20 s\n%s", tc.when, r.stderr)
			}
			sent := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r := p.wait(exitBound)
			t.Logf("jazz exited %s after SIGINT", time.Since(sent).Round(time.Millisecond))
			env := r.envelope(t)
			if r.code != 1 || env.OK == nil || *env.OK || env.StopReason != "interrupted" {
				t.Fatalf("exit %d, envelope %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if env.Answer != tc.want {
				t.Errorf("answer %q, want the partial %q (empty: the teardown budget ran out)\nstdout: %s", env.Answer, tc.want, r.stdout)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
		})
	}
}

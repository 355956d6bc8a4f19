package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil/sleeper"
)

// startAndWaitFor starts jazz and waits for a stderr line containing
// mark (within 30 s), so the signal lands where the test means it to.
func startAndWaitFor(t *testing.T, e *hlEnv, mark string, args ...string) *hlProc {
	t.Helper()
	seen := make(chan struct{}, 1)
	p := e.start(hlRunOpts{args: args, onStderr: func(l string) {
		if strings.Contains(l, mark) {
			select {
			case seen <- struct{}{}:
			default:
			}
		}
	}})
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		r := p.wait(10 * time.Second)
		t.Fatalf("never saw %q on stderr:\n%s", mark, r.stderr)
	}
	return p
}

type interruptEnvelope struct {
	OK         bool   `json:"ok"`
	Error      string `json:"error"`
	Answer     string `json:"answer"`
	StopReason string `json:"stopReason"`
}

// SIGINT while the model streams, in plain mode: the text streamed so far
// is still the answer, on stdout; exit 1 says the run did not complete.
func TestSIGINTPlainKeepsThePartialAnswer(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Partial: "half of the answer", Stall: true})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "x", nil, "read_file")
	p := startAndWaitFor(t, e, `"accumulated":"half of the answer"`, "run", "--stream", "--events", "text", "--agent", "x", "go")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.wait(20 * time.Second)
	if r.code != 1 || r.stdout != "half of the answer\n" {
		t.Fatalf("exit %d stdout %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// SIGINT while a command runs: the command's whole process group is
// killed (a background child included, as /proc shows: gone within 5 s
// of jazz's exit), and the text the model wrote before the call is the answer.
func TestSIGINTMidToolKillsTheCommand(t *testing.T) {
	t.Parallel()
	link, marker := sleeper.Link(t)
	cmd := chatserver.Call{ID: "call_1", Name: "execute_command",
		Arguments: chatserver.JSONArgs(map[string]string{"command": link + " 301 & " + link + " 302", "description": "wait a while"})}
	srv := chatserver.New(chatserver.Turn{Text: "Let me wait for the build.", Calls: []chatserver.Call{cmd}}, chatserver.Turn{Text: "never"})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "x", nil, "execute_command")
	p := e.start(hlRunOpts{args: []string{"run", "--json", "--approval-policy", "high-risk", "--agent", "x", "go"}})
	if _, ok := sleeper.Await(marker, 2, 30*time.Second); !ok {
		_ = p.cmd.Process.Kill()
		r := p.wait(10 * time.Second)
		t.Fatalf("the command's two sleepers never ran: %s\n%s", r.stdout, r.stderr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.wait(20 * time.Second)
	var env interruptEnvelope
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
		t.Fatalf("stdout is not one envelope: %v\n%s", err, r.stdout)
	}
	if r.code != 1 || env.OK || env.StopReason != "interrupted" || env.Answer != "Let me wait for the build." {
		t.Fatalf("exit %d envelope %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// jazz has exited: whatever of the command is left outlived it.
	if left, ok := sleeper.Await(marker, 0, 5*time.Second); !ok {
		t.Fatalf("left running after the interrupt: %q", left)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}

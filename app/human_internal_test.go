package app

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"github.com/jazz-run/jazz/messages"
)

// TestTerminalIsToldWhatTheGateSettled: the terminal prompt is wired to
// the gate's tap as the bridge is: a request the gate settles elsewhere
// (a remote approver) while it is on the screen stops being asked, and
// says who settled it.
func TestTerminalIsToldWhatTheGateSettled(t *testing.T) {
	const run = "run-term"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bus.Start(ctx, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(c)
	})
	inR, inW := io.Pipe()
	defer inW.Close()
	stderr := &syncbuf.Buffer{}
	o := RunOptions{Reachable: true, TerminalHuman: true, Stdin: inR, Stderr: stderr}
	detach, settled, err := attachHuman(ctx, o, b, b, run, nil, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	if settled == nil {
		t.Fatal("the terminal is told nothing the gate settles")
	}
	tap := &askTap{pub: b, runID: run, human: settled}
	req := messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "c1", ToolName: "delete_file", RiskLevel: messages.LevelHighRisk}
	if err := tap.Publish(messages.ApprovalRequiredSubject(run), req, nil); err != nil {
		t.Fatal(err)
	}
	waitStderr(t, stderr, "Approve?")
	tap.Withdraw(messages.ApprovalDecided{RequestID: "apr-1", ToolCallID: "c1", DecidedBy: "remote:alice"})
	waitStderr(t, stderr, "settled meanwhile (remote:alice)")
}

// waitStderr polls out until it holds want, for at most 5 s.
func waitStderr(t *testing.T, out *syncbuf.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 5 s:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

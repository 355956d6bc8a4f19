package humanio

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
)

// TestTerminalStopsAskingWhatWasSettled: a request on the screen that the
// gate settles elsewhere (a remote approver) stops being asked: the
// terminal says so and by whom, and the key pressed for it, even after
// the notice, decides nothing, neither it nor the prompt after it. A
// request settled before it was shown is never shown.
func TestTerminalStopsAskingWhatWasSettled(t *testing.T) {
	const run = "run-settled"
	b, decided, _, out, inW, term := newTerminalRigWith(t, run)
	publish := func(req messages.ApprovalRequired) {
		t.Helper()
		if err := b.Publish(messages.ApprovalRequiredSubject(run), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	noDecision := func(why string) {
		t.Helper()
		select {
		case d := <-decided:
			t.Fatalf("%s: decided %+v", why, d)
		case <-time.After(100 * time.Millisecond):
		}
	}
	publish(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "c1", ToolName: "delete_file", RiskLevel: "high-risk"})
	waitFor(t, out, "Approve?")
	term.Settled(messages.ApprovalDecided{RequestID: "apr-1", ToolCallID: "c1", DecidedBy: "remote:alice"})
	waitFor(t, out, "was settled meanwhile (remote:alice)")
	// Typed by someone who missed the notice: it answers nothing.
	_, _ = io.WriteString(inW, "y\n")
	waitFor(t, out, "(ignored: y)")
	noDecision("the key pressed for a settled prompt")

	// Settled before the terminal showed it: never asked.
	term.Settled(messages.ApprovalDecided{RequestID: "apr-2", ToolCallID: "c2", DecidedBy: messages.DecidedByCancel})
	publish(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "c2", ToolName: "write_file", RiskLevel: "high-risk"})
	publish(messages.ApprovalRequired{RequestID: "apr-3", ToolCallID: "c3", ToolName: "execute_command", RiskLevel: "high-risk"})
	waitFor(t, out, "execute_command")
	if strings.Contains(out.String(), "write_file") {
		t.Fatalf("a request settled before it was shown was asked:\n%s", out.String())
	}
	// The next prompt is answered as usual, by a line typed after it.
	_, _ = io.WriteString(inW, "n\n")
	if d := recv(t, decided); d.RequestID != "apr-3" || d.Approved {
		t.Fatalf("decision %+v, want apr-3 declined", d)
	}
	// Told of the terminal's own answer (the gate withdraws every asked
	// request), nothing more is printed or decided.
	term.Settled(messages.ApprovalDecided{RequestID: "apr-3", ToolCallID: "c3", DecidedBy: messages.DecidedByHuman})
	noDecision("the gate's word on the terminal's own answer")
	if n := strings.Count(out.String(), "settled meanwhile"); n != 1 {
		t.Fatalf("%d settled notices:\n%s", n, out.String())
	}
	_ = inW.Close()
}

package humanio

import (
	"context"
	"encoding/json"
	"github.com/jazz-run/jazz/internal/testutil/syncbuf"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
)

func TestParseAnswer(t *testing.T) {
	opts := []messages.Suggestion{{Value: "pg", Label: "Postgres"}, {Value: "sqlite"}}
	for _, tc := range []struct{ in, want string }{
		{"1", "pg"},
		{" 2 ", "sqlite"},
		{"1,2", "pg, sqlite"},
		{"3", "3"}, // out of range: taken as typed
		{"mysql", "mysql"},
		{"", ""},
		{"   ", ""},
	} {
		if got := ParseAnswer(tc.in, opts); got != tc.want {
			t.Errorf("ParseAnswer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseDecision(t *testing.T) {
	for _, tc := range []struct {
		in      string
		command bool
		want    Decision
		valid   bool
	}{
		{"y", false, Decision{Approved: true}, true},
		{"YES", false, Decision{Approved: true}, true},
		{"n", false, Decision{}, true},
		{"n use the staging db", false, Decision{Note: "use the staging db"}, true},
		{"a", false, Decision{Approved: true, Remember: messages.RememberTool}, true},
		{"c", true, Decision{Approved: true, Remember: messages.RememberCommand}, true},
		{"c", false, Decision{}, false},
		{"maybe", false, Decision{}, false},
		{"", false, Decision{}, false},
	} {
		got, valid := ParseDecision(tc.in, tc.command)
		if got != tc.want || valid != tc.valid {
			t.Errorf("ParseDecision(%q, %v) = %+v %v, want %+v %v", tc.in, tc.command, got, valid, tc.want, tc.valid)
		}
	}
}

func TestFormatQuestion(t *testing.T) {
	q := messages.UserInputRequired{Question: "Which database?", Suggestions: []messages.Suggestion{
		{Value: "pg", Label: "Postgres", Description: "the default"}, {Value: "SQLite"}}}
	want := "❓ Which database?\n  1) Postgres (answers \"pg\") — the default\n  2) SQLite\nAnswer (number, or type your own; empty to skip): "
	if got := FormatQuestion(q); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestTerminal drives the terminal through a real in-process bus: an
// approval answered after an invalid line, then a question, both read
// from one stdin; at EOF the next approval is declined.
func TestTerminal(t *testing.T) {
	const run = "run-t"
	b, decided, answered, out, inW := newTerminalRig(t, run)

	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Publish(messages.ApprovalRequiredSubject(run), messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "execute_command",
		RiskLevel: "high-risk", Message: "Run git push", Command: "git push", CommandKeys: []string{"git push"}, ExecuteArgs: []byte(`{"command":"git push"}`),
		PreviewDiff: "--- a\n+++ b\n"}, nil))
	waitFor(t, out, "Approve?")
	_, _ = io.WriteString(inW, "perhaps\n")
	_, _ = io.WriteString(inW, "c\n")
	d := recv(t, decided)
	if !d.Approved || d.Remember != messages.RememberCommand || d.ToolCallID != "call_1" || d.RequestID != "apr-1" || d.DecidedBy != messages.DecidedByHuman {
		t.Errorf("decision = %+v", d)
	}
	for _, want := range []string{"execute_command", "high-risk", "Run git push", `"command": "git push"`, "+++ b", `c = always this command (every command keyed "git push")`} {
		if !strings.Contains(joined(out.String()), want) {
			t.Errorf("prompt lacks %q:\n%s", want, out.String())
		}
	}

	must(b.Publish(messages.InputRequiredSubject(run), messages.UserInputRequired{RequestID: "ui-1", Question: "When?",
		Suggestions: []messages.Suggestion{{Value: "today"}, {Value: "tomorrow"}}}, nil))
	waitFor(t, out, "Answer (")
	_, _ = io.WriteString(inW, "2\n")
	if a := recv(t, answered); a.RequestID != "ui-1" || a.Response != "tomorrow" {
		t.Errorf("answer = %+v", a)
	}

	_ = inW.Close()
	must(b.Publish(messages.ApprovalRequiredSubject(run), messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "call_2", ToolName: "write_file"}, nil))
	if d := recv(t, decided); d.Approved || d.ToolCallID != "call_2" {
		t.Errorf("after EOF: %+v, want a decline", d)
	}
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5 s")
	}
	var zero T
	return zero
}

// TestPromptsShowHiddenCharacters: nothing the model wrote reaches the
// terminal as a control: escape sequences, carriage returns and bidi
// overrides are printed as visible escapes, in every part of the prompt.
func TestPromptsShowHiddenCharacters(t *testing.T) {
	evil := "echo safe\r\x1b[2K\x1b[1Aecho \u202erepainted\u200b\u009b\xff"
	args, _ := json.Marshal(map[string]string{"command": evil})
	out := FormatApproval(messages.ApprovalRequired{ToolName: "execute_command\x1b[31m", RiskLevel: "unknown",
		Message: "About to run: " + evil, PreviewDiff: "+" + evil + "\n", ExecuteArgs: args, Command: evil})
	out += FormatQuestion(messages.UserInputRequired{Question: evil, Suggestions: []messages.Suggestion{{Value: "v", Label: evil, Description: evil}}})
	for _, r := range out {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u200b' {
			t.Fatalf("raw %U reached the terminal:\n%q", r, out)
		}
	}
	for _, want := range []string{`\r\x1b[2K`, `\u202e`, `\u200b`, `\u009b`, `execute_command\x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks %s:\n%s", want, out)
		}
	}
}

// TestPromptsSayWhoAsks: a sub-agent's request names it, its depth and
// its task, and its "always" says it reaches that sub-agent only.
func TestPromptsSayWhoAsks(t *testing.T) {
	child := messages.Place{AgentID: "subagent-1", AgentName: "Reviewer", Depth: 2, ParentAgentID: "subagent-0"}
	out := FormatApproval(messages.ApprovalRequired{Place: child, ToolName: "execute_command", RiskLevel: "unknown",
		Command: "make", Task: strings.Repeat("review the diff ", 20), RememberScope: messages.ScopeAgent})
	out = joined(out)
	for _, want := range []string{`asked by: sub-agent "Reviewer" (depth 2, spawned by subagent-0)`, "its task: review the diff",
		`a = always this tool (for sub-agent "Reviewer" only)`, `c = always this command (for sub-agent "Reviewer" only)`} {
		if !strings.Contains(out, want) {
			t.Errorf("approval prompt lacks %q:\n%s", want, out)
		}
	}
	top := FormatApproval(messages.ApprovalRequired{Place: messages.Place{AgentName: "dev"}, ToolName: "write_file", RiskLevel: "low-risk"})
	if !strings.Contains(top, "asked by: dev (the top-level agent)") || strings.Contains(top, "only") {
		t.Errorf("top-level prompt:\n%s", top)
	}
	q := FormatQuestion(messages.UserInputRequired{Place: child, Question: "Which?", Task: "check it"})
	if !strings.Contains(q, `asked by: sub-agent "Reviewer" (depth 2`) || !strings.Contains(q, "its task: check it") {
		t.Errorf("question:\n%s", q)
	}
}

// waitFor polls out until it holds want, for at most 5 s.
func waitFor(t *testing.T, out *syncbuf.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 5 s:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTypedAheadLineAnswersNothing: the second line of a two-line paste
// into a question (or a double Enter) came in before the approval that
// follows was shown: it does not answer it; a line typed after does.
func TestTypedAheadLineAnswersNothing(t *testing.T) {
	const run = "run-ahead"
	b, decided, answered, out, inW := newTerminalRig(t, run)

	if err := b.Publish(messages.InputRequiredSubject(run), messages.UserInputRequired{RequestID: "ui-1", Question: "Paste the config"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "Answer (")
	go func() { _, _ = io.WriteString(inW, "port=8080\ny\n") }() // one read: both lines at once
	if a := recv(t, answered); a.Response != "port=8080" {
		t.Fatalf("answer = %+v", a)
	}
	if err := b.Publish(messages.ApprovalRequiredSubject(run), messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "c1", ToolName: "execute_command",
		RiskLevel: "high-risk", Command: "rm -rf ~"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "ignored a line typed before this prompt")
	select {
	case d := <-decided:
		t.Fatalf("a line typed before the approval decided it: %+v", d)
	case <-time.After(50 * time.Millisecond):
	}
	go func() { _, _ = io.WriteString(inW, "n\n") }()
	if d := recv(t, decided); d.Approved || d.RequestID != "apr-1" {
		t.Fatalf("decision = %+v", d)
	}
}

// The keys "c" adds are the model's text: each is quoted in ASCII, so
// none can end the list, add a line or hide a character.
func TestCommandKeysAreShownInert(t *testing.T) {
	key := "x\", every command keyed \"ls\n\u202e"
	out := FormatApproval(messages.ApprovalRequired{ToolName: "execute_command", RiskLevel: "high-risk",
		Command: "x", CommandKeys: []string{key, "git diff"}})
	out = joined(out)
	last := out[strings.LastIndex(out, "\n")+1:]
	want := `c = always this command (every command keyed "x\", every command keyed \"ls\n\u202e", "git diff")`
	if !strings.Contains(last, want) {
		t.Fatalf("choices line %q lacks %q", last, want)
	}
}

// newTerminalRig is a Terminal serving run on an in-process bus: the
// decisions and answers it publishes, what it prints, and the pipe that
// is its stdin. Everything stops when the test ends.
func newTerminalRig(t *testing.T, run string) (*bus.Bus, chan messages.ApprovalDecided, chan messages.UserInputAnswered, *syncbuf.Buffer, *io.PipeWriter) {
	t.Helper()
	b, decided, answered, out, inW, _ := newTerminalRigWith(t, run)
	return b, decided, answered, out, inW
}

// newTerminalRigWith is newTerminalRig that hands over the Terminal too.
func newTerminalRigWith(t *testing.T, run string) (*bus.Bus, chan messages.ApprovalDecided, chan messages.UserInputAnswered, *syncbuf.Buffer, *io.PipeWriter, *Terminal) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := bus.Start(ctx, bus.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = b.Close(c)
	})
	t.Cleanup(cancel)
	decided := make(chan messages.ApprovalDecided, 4)
	answered := make(chan messages.UserInputAnswered, 4)
	s1, _ := b.Conn().Subscribe(messages.ApprovalDecidedSubject(run), func(m *nats.Msg) {
		d, _ := messages.Decode[messages.ApprovalDecided](m.Data)
		decided <- d
	})
	s2, _ := b.Conn().Subscribe(messages.InputAnsweredSubject(run), func(m *nats.Msg) {
		a, _ := messages.Decode[messages.UserInputAnswered](m.Data)
		answered <- a
	})
	t.Cleanup(func() { _ = s1.Unsubscribe() })
	t.Cleanup(func() { _ = s2.Unsubscribe() })
	out := &syncbuf.Buffer{}
	term := NewTerminal(run, b, out)
	if err := term.Attach(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.Detach)
	inR, inW := io.Pipe()
	go term.Serve(ctx, inR)
	return b, decided, answered, out, inW, term
}

package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// Issue 13 item 2: the flags jazz accepts do something.

// TestTimezoneReachesGetTime: --timezone is the zone get_time answers in.
func TestTimezoneReachesGetTime(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(calls(chatserver.Call{ID: "t1", Name: "get_time", Arguments: "{}"}), answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "get_time")
	wantSuccess(t, w.exec("", "run", "--agent", "x", "--json", "--timezone", "America/Sao_Paulo", "what time is it?"))
	msgs := srv.Requests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.Content == nil || !strings.Contains(*last.Content, `"timezone":"America/Sao_Paulo"`) {
		t.Fatalf("get_time result %+v", last)
	}
}

// TestDebugAndVerboseLog: --debug writes the documented debug log to
// stderr (the run's makeup and the actor engine's own records), -v the
// info-level part; stdout stays the answer alone, and under --events the
// log lines are JSON like the rest.
func TestDebugAndVerboseLog(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("four"), answer("four"), answer("four"), answer("four"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	plain := w.exec("", "run", "--agent", "x", "hi")
	if strings.Contains(plain.stderr, "level=") {
		t.Fatalf("a log without --debug or -v:\n%s", plain.stderr)
	}
	r := w.exec("", "run", "--debug", "--agent", "x", "hi")
	if r.code != 0 || r.stdout != "four\n" {
		t.Fatalf("exit %d stdout %q", r.code, r.stdout)
	}
	for _, want := range []string{`level=INFO msg="jazz run"`, "agent=x", "model=openai/gpt-4o-mini", "tools=read_file", `level=DEBUG msg="Actor started"`, `msg="Actor stopped" pid=local/run/`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--debug stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = w.exec("", "run", "-v", "--agent", "x", "hi")
	if !strings.Contains(r.stderr, `msg="jazz run"`) || strings.Contains(r.stderr, "level=DEBUG") {
		t.Errorf("-v stderr:\n%s", r.stderr)
	}
	r = w.exec("", "run", "--debug", "--events", "tools", "--agent", "x", "hi")
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			t.Fatalf("a text line on a JSON stderr: %q", line)
		}
	}
	if !strings.Contains(r.stderr, "Actor started") {
		t.Errorf("the engine's log is missing under --events:\n%s", r.stderr)
	}
	// The engine logs after the fact, from its own actor: the log is
	// complete at exit, down to the run actor's stop.
	if !strings.Contains(r.stderr, `msg=\"Actor stopped\" pid=local/run/`) {
		t.Errorf("the engine's last lines are missing under --events:\n%s", r.stderr)
	}
}

// TestNoTUIExported: --no-tui sets JAZZ_NO_TUI=1 for what jazz starts.
func TestNoTUIExported(t *testing.T) {
	t.Parallel()
	cmd := chatserver.Call{ID: "c1", Name: "execute_command",
		Arguments: chatserver.JSONArgs(map[string]string{"command": "printenv JAZZ_NO_TUI", "description": "show the variable"})}
	srv := chatserver.New(calls(cmd), answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 0, "autoApprovedCommands": ["printenv"]}`)
	w.agent("x", "execute_command")
	r := w.exec("", "run", "--no-tui", "--agent", "x", "--json", "--approval-policy", "high-risk", "go")
	wantSuccess(t, r)
	msgs := srv.Requests()[1].Messages
	if last := msgs[len(msgs)-1]; last.Content == nil || !strings.Contains(*last.Content, "1") {
		t.Fatalf("command saw %+v", last)
	}
}

// Issue 13 item 11: wording.

// TestErrorWording: a 401 says its status once, and a missing key does
// not name the provider twice; an answer of spaces is kept as sent.
func TestErrorWording(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided."})
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	e := wantFailure(t, w.exec("", "run", "--agent", "x", "--json", "hi"), "Authentication failed")
	if n := strings.Count(e.Error, "HTTP 401"); n != 1 {
		t.Errorf("%q says HTTP 401 %d times", e.Error, n)
	}
	w.env = append(w.env, "OPENAI_API_KEY=")
	e = wantFailure(t, w.exec("", "run", "--agent", "x", "--json", "hi"), "OPENAI_API_KEY")
	if strings.Contains(e.Error, "openai: openai") {
		t.Errorf("provider named twice: %q", e.Error)
	}

	sp := chatserver.New(answer(" "))
	defer sp.Close()
	w2 := newWorld(t, sp.URL())
	w2.agent("x", "read_file")
	if got := wantSuccess(t, w2.exec("", "run", "--agent", "x", "--json", "hi")).Answer; got != " " {
		t.Errorf("answer %q, want the model's %q", got, " ")
	}
}

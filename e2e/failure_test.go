package e2e_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestBadInput: every kind of bad input gets a clear message and exit 1,
// never a panic, and in --json mode stdout is exactly one failure object.
// The same cases in plain mode leave stdout empty and put the message on
// stderr.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		turns []chatserver.Turn
		// setup adjusts the world before the run; it may return a base URL
		// that replaces the server's.
		setup func(w *world)
		stdin string
		args  []string
		want  string
	}{
		{name: "no agent flag", args: []string{"run", "hi"}, want: "No agent specified. Use --agent <agentId>."},
		{name: "blank agent", args: []string{"run", "--agent", "  ", "hi"}, want: "No agent specified. Use --agent <agentId>."},
		{name: "unknown agent", args: []string{"run", "--agent", "nobody", "hi"}, want: "No agent found with ID: nobody"},
		{name: "blank prompt", args: []string{"run", "--agent", "x", "   "}, stdin: " \n\t\n", want: "No prompt provided. Pass it as an argument or pipe it via stdin."},
		{name: "bad timeout", args: []string{"run", "--agent", "x", "--timeout", "30s", "hi"}, want: `--timeout must be a positive integer (got "30s").`},
		{name: "zero max iterations", args: []string{"run", "--agent", "x", "--max-iterations", "0", "hi"}, want: `--max-iterations must be a positive integer (got "0").`},
		{name: "bad policy", args: []string{"run", "--agent", "x", "--approval-policy", "yolo", "hi"}, want: `Invalid --approval-policy "yolo". Expected read-only, low-risk, or high-risk.`},
		{name: "bad events", args: []string{"run", "--agent", "x", "--events", "tools,nope", "hi"}, want: `Invalid --events category "nope".`},
		{name: "unknown flag", args: []string{"run", "--agent", "x", "--frobnicate", "hi"}, want: "unknown flag: --frobnicate"},
		{name: "missing config file", args: []string{"run", "--agent", "x", "--config", "/nonexistent/jazz.json", "hi"}, want: "/nonexistent/jazz.json"},
		{
			name: "unreachable provider", args: []string{"run", "--agent", "x", "hi"},
			setup: func(w *world) { w.baseURL = closedURL(t) },
			want:  "",
		},
		{name: "provider 400", args: []string{"run", "--agent", "x", "hi"},
			turns: []chatserver.Turn{{Status: http.StatusBadRequest, ErrorMessage: "Invalid parameter: messages"}}, want: "Invalid parameter: messages"},
		{name: "provider 401", args: []string{"run", "--agent", "x", "hi"},
			turns: []chatserver.Turn{{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided"}}, want: "Incorrect API key provided"},
		{name: "provider 500", args: []string{"run", "--agent", "x", "hi"},
			turns: []chatserver.Turn{{Status: http.StatusInternalServerError, ErrorMessage: "The server had an error"}}, want: "The server had an error"},
		{name: "provider 503 twice with one retry", args: []string{"run", "--agent", "x", "hi"},
			setup: func(w *world) { w.writeConfig(`{"maxRetries": 1}`) },
			turns: []chatserver.Turn{{Status: http.StatusServiceUnavailable, ErrorMessage: "overloaded"}, {Status: http.StatusServiceUnavailable, ErrorMessage: "still overloaded"}},
			want:  "still overloaded"},
		{name: "malformed SSE json", args: []string{"run", "--agent", "x", "--stream", "hi"},
			turns: []chatserver.Turn{{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\n\n"}}, want: ""},
		{name: "SSE cut before the end", args: []string{"run", "--agent", "x", "--stream", "hi"},
			// A cut stream is retried once as a batch call (agent-loop.md
			// §6); that one fails too.
			turns: []chatserver.Turn{{Raw: cutStream}, {Status: http.StatusBadGateway, ErrorMessage: "upstream gone"}},
			want:  "upstream gone"},
		{name: "batch body not JSON", args: []string{"run", "--agent", "x", "--no-stream", "hi"},
			turns: []chatserver.Turn{{Raw: "<html>bad gateway</html>", RawContentType: "text/html"}}, want: ""},
	}
	for _, c := range cases {
		for _, jsonMode := range []bool{true, false} {
			name := c.name + "/plain"
			if jsonMode {
				name = c.name + "/json"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := chatserver.New(c.turns...)
				defer srv.Close()
				w := newWorld(t, srv.URL())
				w.agent("x", "read_file")
				if c.setup != nil {
					c.setup(w)
				}
				args := append([]string(nil), c.args...)
				if jsonMode {
					args = append(args, "--json")
				}
				r := w.exec(c.stdin, args...)
				if jsonMode {
					e := wantFailure(t, r, c.want)
					if strings.TrimSpace(e.Error) == "" {
						t.Fatalf("empty error message")
					}
					return
				}
				if r.code != 1 || r.stdout != "" {
					t.Fatalf("plain mode: exit %d stdout %q, want exit 1 and nothing on stdout\nstderr: %s", r.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stderr, c.want) || strings.TrimSpace(r.stderr) == "" {
					t.Fatalf("stderr %q lacks %q", r.stderr, c.want)
				}
			})
		}
	}
}

// cutStream is an SSE body that ends after one content chunk: no finish
// reason, no [DONE].
const cutStream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"},\"finish_reason\":null}]}\n\n"

// TestCutStreamFallsBack: a stream cut short is retried as one batch call
// even with retries off, and the batch answer wins.
func TestCutStreamFallsBack(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Raw: cutStream}, answer("from batch"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--stream", "hi")
	if e := wantSuccess(t, r); e.Answer != "from batch" {
		t.Fatalf("answer %q", e.Answer)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream {
		t.Fatalf("requests: %d, want a stream then a batch", len(reqs))
	}
}

// closedURL is a 127.0.0.1 address nobody listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// TestUnreachableProviderMessage: the refused connection is named.
func TestUnreachableProviderMessage(t *testing.T) {
	t.Parallel()
	w := newWorld(t, closedURL(t))
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "hi")
	e := wantFailure(t, r, "")
	low := strings.ToLower(e.Error)
	if !strings.Contains(low, "refused") && !strings.Contains(low, "connect") && !strings.Contains(low, "reach") {
		t.Fatalf("error %q does not say the provider could not be reached", e.Error)
	}
}

// TestRetryThenSuccess: a 5xx is retried (maxRetries 1) and the run
// succeeds on the second attempt, with a retry notice on stderr.
func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Status: http.StatusBadGateway, ErrorMessage: "bad gateway"}, answer("fine"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 1}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "hi")
	if e := wantSuccess(t, r); e.Answer != "fine" {
		t.Fatalf("answer %q", e.Answer)
	}
	if len(srv.Requests()) != 2 || !strings.Contains(r.stderr, "Trying again") {
		t.Fatalf("%d requests; stderr %q", len(srv.Requests()), r.stderr)
	}
}

// TestTimeout: --timeout cancels a stalled provider (before the answer,
// mid-stream, and during a slow batch) and reports the spec's message.
func TestTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn chatserver.Turn
		flag string
	}{
		{"slow batch", chatserver.Turn{Text: "late", Delay: 20 * time.Second}, "--no-stream"},
		{"stalled stream", chatserver.Turn{Text: "late", Stall: true}, "--stream"},
		{"stalled batch body", chatserver.Turn{Text: "late", Stall: true}, "--no-stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := chatserver.New(c.turn)
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.agent("x", "read_file")
			r := w.exec("", "run", "--agent", "x", "--json", c.flag, "--timeout", "400", "hi")
			e := wantFailure(t, r, "Run exceeded the 400ms timeout.")
			if e.Error != "Run exceeded the 400ms timeout." {
				t.Errorf("error %q", e.Error)
			}
			// Generous: the point is that the process does not wait for
			// the provider's 20 s.
			if r.took > 10*time.Second {
				t.Errorf("took %v after a 400ms timeout", r.took)
			}
		})
	}
}

// TestTimeoutDuringTools: the deadline also covers tool execution: a
// command blocked on a FIFO nobody writes is cancelled by --timeout. (Not
// read_file: the read tools refuse FIFOs at once.)
func TestTimeoutDuringTools(t *testing.T) {
	t.Parallel()
	cat := chatserver.Call{ID: "call_1", Name: "execute_command",
		Arguments: chatserver.JSONArgs(map[string]string{"command": "cat pipe", "description": "read the pipe"})}
	srv := chatserver.New(calls(cat), answer("never"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 0, "autoApprovedCommands": ["cat"]}`)
	mkfifo(t, w.cwd+"/pipe")
	w.agent("x", "execute_command")
	r := w.exec("", "run", "--agent", "x", "--json", "--timeout", "500", "hi")
	wantFailure(t, r, "Run exceeded the 500ms timeout.")
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestMaxIterations: a model that never stops asking is cut at the cap,
// with a warning, and the run still exits 0.
func TestMaxIterations(t *testing.T) {
	t.Parallel()
	srv := chatserver.NewFunc(func(n int, _ chatserver.Request) chatserver.Turn {
		return chatserver.Turn{Text: "again", Calls: []chatserver.Call{{Name: "ls", Arguments: `{"path":"."}`}}}
	})
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "ls")
	r := w.exec("", "run", "--agent", "x", "--json", "--max-iterations", "3", "loop")
	wantSuccess(t, r)
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if !strings.Contains(r.stderr, "iteration limit reached (3)") {
		t.Errorf("stderr lacks the iteration warning: %q", r.stderr)
	}
	// The last request carries the ephemeral budget notice (3/3 ≥ 0.9).
	last := srv.Requests()[2].LastUser()
	if !strings.HasPrefix(last, "[BUDGET CRITICAL: Iteration 3/3") {
		t.Errorf("last user message %q", last)
	}
}

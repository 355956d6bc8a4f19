package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// modes are the two wire paths: the batch answer and the SSE stream.
var modes = []struct {
	name string
	flag string
}{
	{"batch", "--no-stream"},
	{"sse", "--stream"},
}

func TestOneTurnAnswer(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name+"/json", func(t *testing.T) {
			srv := chatserver.New(answer("The answer is **4**.\n"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.agent("x", "read_file")
			r := w.exec("", "run", "--agent", "x", "--json", m.flag, "what is 2+2?")
			e := wantSuccess(t, r)
			if e.Answer != "The answer is **4**.\n" {
				t.Errorf("answer %q: want the content untrimmed", e.Answer)
			}
			if e.TokenUsage.TotalTokens == 0 || e.TokenUsage.TotalTokens != e.TokenUsage.PromptTokens+e.TokenUsage.CompletionTokens {
				t.Errorf("tokenUsage %+v", e.TokenUsage)
			}
			if e.ToolCalls == nil || len(e.ToolCalls) != 0 {
				t.Errorf("toolCalls %v: want []", e.ToolCalls)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			q := reqs[0]
			if q.Stream != (m.flag == "--stream") || q.Model != "gpt-4o-mini" || q.Auth != "Bearer test" {
				t.Errorf("request stream=%v model=%q auth=%q", q.Stream, q.Model, q.Auth)
			}
			if q.LastUser() != "what is 2+2?" || q.Messages[0].Role != "system" {
				t.Errorf("messages %+v", q.Messages)
			}
			if !q.HasTool("read_file") || len(q.Tools) != 1 {
				t.Errorf("tools offered %+v, want exactly read_file", q.Tools)
			}
		})
		t.Run(m.name+"/plain", func(t *testing.T) {
			srv := chatserver.New(answer("  four  \n"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.agent("x", "read_file")
			r := w.exec("", "run", "--agent", "x", m.flag, "what is 2+2?")
			if r.code != 0 || r.stdout != "four\n" {
				t.Fatalf("exit %d stdout %q: want 0 and the trimmed answer\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "✔ completed") {
				t.Errorf("stderr lacks the footer: %q", r.stderr)
			}
		})
	}
}

func TestPromptFromStdin(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	prompt := "Summarize this: \"quotes\", $(not a subshell) and `ticks`\nsecond line"
	r := w.exec(prompt+"\n\n", "run", "--agent", "x", "--json")
	wantSuccess(t, r)
	if got := srv.Requests()[0].LastUser(); got != prompt {
		t.Fatalf("user message %q, want the stdin text trimmed: %q", got, prompt)
	}
}

// TestToolResultsFedBack checks the shapes the provider gets back after a
// batch of calls: the assistant message with tool_calls, then one tool
// message per call with its tool_call_id, in call order, carrying the
// result (or {error, result} for a failed call).
func TestToolResultsFedBack(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := chatserver.New(
				chatserver.Turn{Text: "Let me look.", Calls: []chatserver.Call{
					readFile("call_a", "alpha.txt"),
					{ID: "call_b", Name: "ls", Arguments: `{"path":"."}`},
					readFile("call_c", "missing.txt"),
					{ID: "call_d", Name: "read_file", Arguments: `{"path": "alpha.txt"`},
					{ID: "call_e", Name: "write_file", Arguments: `{"path":"x","content":"y"}`},
					readFile("call_f", "beta.txt"),
				}},
				answer("done"),
			)
			defer srv.Close()
			w := newWorld(t, srv.URL())
			w.file("alpha.txt", "ALPHA-CONTENT\n")
			w.file("beta.txt", "BETA-CONTENT\n")
			w.agent("x", "read_file", "ls")
			r := w.exec("", "run", "--agent", "x", "--json", m.flag, "read them")
			e := wantSuccess(t, r)
			if e.Answer != "done" {
				t.Errorf("answer %q", e.Answer)
			}
			ids := []string{"call_a", "call_b", "call_c", "call_d", "call_e", "call_f"}
			if len(e.ToolCalls) != len(ids) {
				t.Fatalf("envelope toolCalls %+v: want all %d, failed ones included", e.ToolCalls, len(ids))
			}
			for i, id := range ids {
				if e.ToolCalls[i].ID != id {
					t.Errorf("toolCalls[%d].id = %q, want %q", i, e.ToolCalls[i].ID, id)
				}
			}
			if e.ToolCalls[3].Arguments != `{"path": "alpha.txt"` {
				t.Errorf("invalid arguments not kept as emitted: %q", e.ToolCalls[3].Arguments)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			// system, user, assistant(tool_calls), 6 × tool
			if len(msgs) != 3+len(ids) {
				t.Fatalf("second request has %d messages, want %d: %+v", len(msgs), 3+len(ids), msgs)
			}
			asst := msgs[2]
			if asst.Role != "assistant" || len(asst.ToolCalls) != len(ids) || asst.Content == nil || *asst.Content != "Let me look." {
				t.Fatalf("assistant message %+v", asst)
			}
			for i, tc := range asst.ToolCalls {
				if tc.ID != ids[i] || tc.Type != "function" {
					t.Errorf("assistant tool_calls[%d] = %+v", i, tc)
				}
			}
			if asst.ToolCalls[3].Function.Arguments != `{"path": "alpha.txt"` {
				t.Errorf("assistant tool_calls[3] arguments %q: want them as the model sent them", asst.ToolCalls[3].Function.Arguments)
			}
			want := []string{"ALPHA-CONTENT", "beta.txt", "Path not found: missing.txt", "Invalid JSON in tool arguments", "Unknown tool: write_file", "BETA-CONTENT"}
			for i, id := range ids {
				tm := msgs[3+i]
				if tm.Role != "tool" || tm.ToolCallID != id || tm.Content == nil {
					t.Errorf("message %d = %+v, want the tool result of %s", 3+i, tm, id)
					continue
				}
				if !strings.Contains(*tm.Content, want[i]) {
					t.Errorf("tool result of %s = %q, want it to mention %q", id, *tm.Content, want[i])
				}
			}
			// A failed call reaches the model as {error, result}.
			var failed map[string]json.RawMessage
			if err := json.Unmarshal([]byte(*msgs[5].Content), &failed); err != nil || failed["error"] == nil {
				t.Errorf("failed result %q is not {error, result}", *msgs[5].Content)
			}
		})
	}
}

// TestStdoutPurityWithEvents: with every event category on, a streamed
// run whose tool output looks like JSON envelopes still prints exactly one
// object on stdout, and every stderr line is an NDJSON object.
func TestStdoutPurityWithEvents(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(
		chatserver.Turn{Text: "reading", Calls: []chatserver.Call{readFile("call_1", "tricky.txt")}},
		answer("line one\n{\"ok\":false}\nline three"),
	)
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.file("tricky.txt", "{\"ok\":true,\"answer\":\"fake\"}\n\x1b[31mred\x1b[0m\n"+strings.Repeat("x", 5000)+"\n")
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--stream", "--events", "all", "go")
	e := wantSuccess(t, r)
	if e.Answer != "line one\n{\"ok\":false}\nline three" {
		t.Errorf("answer %q", e.Answer)
	}
	types := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(r.stderr, "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stderr line is not a JSON object: %q", line)
		}
		typ, _ := ev["type"].(string)
		types[typ] = true
	}
	for _, want := range []string{"stream_start", "text_chunk", "tool_call", "tools_detected", "tool_execution_start", "tool_execution_complete", "usage_update", "complete"} {
		if !types[want] {
			t.Errorf("no %s event on stderr (saw %v)", want, types)
		}
	}
}

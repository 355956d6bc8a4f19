package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/store/history"
)

// hlEchoChat answers "seen: <user messages joined by |>", so an answer
// shows exactly which prior turns the model was given. A tool call first
// when the prompt starts with "tool:", so transcripts hold tool pairs.
func hlEchoChat(t *testing.T) *hlChat {
	return hlNewChat(t, func(n int, req hlChatReq) hlReply {
		users := req.userTexts()
		last := req.Messages[len(req.Messages)-1]
		if strings.HasPrefix(users[len(users)-1], "tool:") && last.Role == "user" {
			return hlReply{Calls: []hlCall{{"read_file", `{"path":"notes.txt"}`}}, Prompt: 5, Completion: 1}
		}
		return hlReply{Content: "seen: " + strings.Join(users, "|"), Prompt: 5, Completion: 1}
	})
}

// hlHistory reads the stored conversation as the file has it.
func hlHistory(t *testing.T, e *hlEnv, agentID, conv string) []messages.ChatMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.home, "history", agentID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AgentID       string `json:"agentId"`
		Conversations []struct {
			ConversationID string                 `json:"conversationId"`
			MessageCount   int                    `json:"messageCount"`
			Messages       []messages.ChatMessage `json:"messages"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("history file is not valid JSON: %v", err)
	}
	for _, c := range doc.Conversations {
		if c.ConversationID == conv {
			if c.MessageCount != len(c.Messages) {
				t.Errorf("messageCount %d, %d messages", c.MessageCount, len(c.Messages))
			}
			hlProviderValid(t, c.Messages)
			return c.Messages
		}
	}
	t.Fatalf("conversation %q not stored", conv)
	return nil
}

// hlProviderValid fails when a stored transcript would be refused by a
// provider: a tool call without its result, or a result without its call.
func hlProviderValid(t *testing.T, msgs []messages.ChatMessage) {
	t.Helper()
	if got := history.Sanitize(msgs); len(got) != len(msgs) {
		t.Errorf("stored transcript is not provider-valid: %d messages, %d after sanitizing", len(msgs), len(got))
	}
}

func TestConversationRemembers(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeFile("notes.txt", "the secret is 42")
	chat := hlEchoChat(t)
	id := e.openAIAgent(chat, "mem", true, nil, "read_file")
	run := func(conv, prompt string) hlEnvelope {
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "mem", "--conversation", conv}, stdin: prompt})
		if r.code != 0 {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		return r.envelope(t)
	}
	if got := run("chat-1", "tool: my name is Ada").Answer; got != "seen: tool: my name is Ada" {
		t.Fatalf("turn 1 answer %q", got)
	}
	if got := run("chat-1", "what is my name?").Answer; got != "seen: tool: my name is Ada|what is my name?" {
		t.Fatalf("turn 2 did not get turn 1: %q", got)
	}
	if got := run("chat-2", "fresh?").Answer; got != "seen: fresh?" {
		t.Fatalf("another key leaked memory: %q", got)
	}
	msgs := hlHistory(t, e, id, "chat-1")
	// system, user, assistant(tool call), tool, assistant, user, assistant
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant,user,assistant" {
		t.Errorf("stored roles = %v", roles)
	}
	// The system message is stored but never sent twice.
	reqs := chat.requests()
	last := reqs[len(reqs)-2] // turn 2 of chat-1
	systems := 0
	for _, m := range last.Messages {
		if m.Role == "system" {
			systems++
		}
	}
	if systems != 1 {
		t.Errorf("turn 2 request has %d system messages", systems)
	}
}

// TestConversationConcurrent: 20 runs on one key at the same time lose
// nothing: every prompt and every answer is in the stored transcript.
func TestConversationConcurrent(t *testing.T) {
	t.Parallel()
	const n = 20
	e := hlNewEnv(t)
	chat := hlNewChat(t, func(_ int, req hlChatReq) hlReply {
		users := req.userTexts()
		return hlReply{Content: "ack " + users[len(users)-1]}
	})
	id := e.openAIAgent(chat, "busy", false, nil)
	var wg sync.WaitGroup
	results := make([]hlResult, n)
	procs := make([]*hlProc, n)
	for i := range n {
		procs[i] = e.start(hlRunOpts{args: []string{"run", "--json", "--agent", "busy", "--conversation", "shared"}, stdin: fmt.Sprintf("msg-%02d", i)})
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = procs[i].wait(120 * time.Second)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 || strings.Contains(r.stderr, "failed to save") {
			t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	msgs := hlHistory(t, e, id, "shared")
	text := map[string]bool{}
	for _, m := range msgs {
		text[m.Role+":"+m.Content] = true
	}
	for i := range n {
		p := fmt.Sprintf("msg-%02d", i)
		if !text["user:"+p] || !text["assistant:ack "+p] {
			t.Errorf("%s or its answer was lost", p)
		}
	}
}

// TestConversationCorrupt: a damaged history file is an empty history and
// a warning, never a crash; the next save starts a good file.
func TestConversationCorrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, content string }{
		{"not json", "{\"conversations\": [ {\"conversationId\": \"c\", \"messa"},
		{"no conversations array", `{"agentId":"x"}`},
		{"wrong types", `{"conversations":[{"conversationId":"c","messages":"nope"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := hlNewEnv(t)
			chat := hlEchoChat(t)
			id := e.openAIAgent(chat, "a", false, nil)
			if err := os.MkdirAll(filepath.Join(e.home, "history"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.home, "history", id+".json"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "a", "--conversation", "c"}, stdin: "hello"})
			if r.code != 0 || r.envelope(t).Answer != "seen: hello" {
				t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "⚠") {
				t.Errorf("no warning on stderr:\n%s", r.stderr)
			}
			hlHistory(t, e, id, "c")
		})
	}
}

// TestConversationKilledDuringSave kills runs with SIGKILL at staggered
// moments around their save (into a large history file, so saves take a
// while) and checks the history stays valid after every kill, then that a
// later run still saves once the dead run's lock has gone stale. A smoke
// test of the real binary: that a death at any byte of a save keeps the
// prior history is proved deterministically, byte by byte, by store/history
// TestCrashInsideSaveKeepsThePriorHistory; so the file here is only big
// enough (2.4 MB) for a save to take a while, and eight kills sample it.
func TestConversationKilledDuringSave(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	chat := hlNewChat(t, func(_ int, req hlChatReq) hlReply { return hlReply{Content: "ok"} })
	id := e.openAIAgent(chat, "k", false, nil)
	// 30 conversations of ~80 KB each: a 2.4 MB file to rewrite on save.
	big := strings.Repeat("x", 80_000)
	var convs []map[string]any
	for i := range 30 {
		convs = append(convs, map[string]any{"conversationId": fmt.Sprintf("old-%d", i), "agentId": id, "title": "old",
			"startedAt": "2026-01-01T00:00:00.000Z", "endedAt": nil, "messageCount": 2,
			"messages": []map[string]string{{"role": "user", "content": big}, {"role": "assistant", "content": "ok"}}})
	}
	data, _ := json.Marshal(map[string]any{"agentId": id, "conversations": convs})
	hdir := filepath.Join(e.home, "history")
	if err := os.MkdirAll(hdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hdir, id+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// Learn how long a whole run takes, then kill across that span.
	r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "k", "--conversation", "victim"}, stdin: "warm-up"})
	if r.code != 0 {
		t.Fatalf("warm-up: %s", r.stderr)
	}
	span := r.elapsed
	const kills = 8
	for i := range kills {
		lock := filepath.Join(hdir, id+".lock")
		_ = os.Remove(lock) // a previous victim's lock would only make this one wait
		p := e.start(hlRunOpts{args: []string{"run", "--json", "--agent", "k", "--conversation", "victim"}, stdin: fmt.Sprintf("kill-%d", i)})
		time.Sleep(span/2 + span*time.Duration(i)/kills)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait(30 * time.Second)
		recs := hlHistory(t, e, id, "victim") // parses and checks validity
		if len(recs) < 3 {
			t.Fatalf("after kill %d: victim has %d messages", i, len(recs))
		}
	}
	// A lock left by a killed run is stale after 30 s: age it instead of
	// waiting, and the next run must save.
	lock := filepath.Join(hdir, id+".lock")
	if _, err := os.Stat(lock); err == nil {
		old := time.Now().Add(-time.Minute)
		_ = os.Chtimes(lock, old, old)
	}
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "k", "--conversation", "victim"}, stdin: "after"})
	if r.code != 0 || strings.Contains(r.stderr, "failed to save") {
		t.Fatalf("run after kills: exit %d\n%s", r.code, r.stderr)
	}
	msgs := hlHistory(t, e, id, "victim")
	if last := msgs[len(msgs)-2]; last.Content != "after" {
		t.Errorf("last user message = %q, want after", last.Content)
	}
	left, _ := filepath.Glob(filepath.Join(hdir, "*.tmp"))
	if len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// Issue 13 item 10: what a user looks for is there to find.

// TestToolsCommand: jazz tools lists every tool with its tier, gate and
// arguments; --json is one object holding all of it.
func TestToolsCommand(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	r := w.exec("", "tools")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 30 || !strings.HasPrefix(lines[0], "TOOL") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s:\n%s", name, r.stdout)
		return nil
	}
	if f := row("read_file"); f[1] != "read-only" || f[2] != "no" || !strings.Contains(strings.Join(f, " "), "path*") {
		t.Errorf("read_file row %v", f)
	}
	if f := row("write_file"); f[1] != "high-risk" || f[2] != "yes" {
		t.Errorf("write_file row %v", f)
	}
	if strings.Contains(r.stdout, "execute_write_file") {
		t.Errorf("a hidden twin is listed")
	}

	r = w.exec("", "tools", "--json")
	var doc struct {
		OK    bool `json:"ok"`
		Tools []struct {
			Name      string `json:"name"`
			Tier      string `json:"tier"`
			Gated     bool   `json:"gated"`
			Arguments []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"arguments"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.OK || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	found := false
	for _, tl := range doc.Tools {
		if tl.Name == "write_file" {
			found = tl.Gated && tl.Tier == "high-risk" && len(tl.Arguments) > 0
		}
	}
	if !found || len(doc.Tools) != len(lines)-1 {
		t.Fatalf("--json lists %d tools (text %d); write_file right: %v", len(doc.Tools), len(lines)-1, found)
	}
}

// TestConversationCommands: list, show and rm the conversations jazz run
// --conversation keeps.
func TestConversationCommands(t *testing.T) {
	t.Parallel()
	// Each conversation keeps work state (a todo list) besides its record.
	todos := func(id string) chatserver.Turn {
		return calls(chatserver.Call{ID: id, Name: "manage_todos", Arguments: `{"todos":[{"content":"x","status":"pending","priority":"low"}]}`})
	}
	srv := chatserver.New(todos("t1"), answer("first answer"), todos("t2"), answer("second answer"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	id := w.agent("x", "read_file", "manage_todos")
	for _, c := range []string{"alpha", "beta"} {
		if r := w.exec("", "run", "--agent", "x", "--conversation", c, "--approval-policy", "low-risk", "hello "+c); r.code != 0 {
			t.Fatalf("run: %s", r.stderr)
		}
		if _, err := os.Stat(filepath.Join(w.home, "work", id, c, "todos.json")); err != nil {
			t.Fatalf("no work state for %s: %v", c, err)
		}
	}
	r := w.exec("", "conversation", "list", "--agent", "x")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "beta") || !strings.Contains(lines[1], "hello alpha") {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.exec("", "conversation", "list", "--agent", "x", "--json")
	var doc struct {
		OK            bool `json:"ok"`
		Conversations []struct {
			ConversationID string `json:"conversationId"`
			MessageCount   int    `json:"messageCount"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.OK || len(doc.Conversations) != 2 || doc.Conversations[1].MessageCount < 2 {
		t.Fatalf("list --json: %v %s", err, r.stdout)
	}
	r = w.exec("", "conversation", "show", "--agent", "x", "alpha")
	if r.code != 0 || !strings.Contains(r.stdout, "first answer") || !strings.Contains(r.stdout, `"hello alpha"`) {
		t.Fatalf("show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = w.exec("", "conversation", "rm", "--agent", "x", "alpha"); r.code != 0 {
		t.Fatalf("rm: %s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.home, "work", id, "alpha")); !os.IsNotExist(err) {
		t.Fatalf("rm left the conversation's work state: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.home, "work", id, "beta", "todos.json")); err != nil {
		t.Fatalf("rm of alpha removed beta's work state: %v", err)
	}
	r = w.exec("", "conversation", "show", "--agent", "x", "alpha")
	if r.code != 1 || !strings.Contains(r.stderr, `no such conversation "alpha"`) {
		t.Fatalf("show after rm: exit %d %s", r.code, r.stderr)
	}
	if r = w.exec("", "conversation", "list", "--agent", "x"); strings.Contains(r.stdout, "alpha") || !strings.Contains(r.stdout, "beta") {
		t.Fatalf("list after rm:\n%s", r.stdout)
	}
	if r = w.exec("", "conversation", "list"); r.code != 1 || !strings.Contains(r.stderr, "--agent") {
		t.Fatalf("list without --agent: exit %d %s", r.code, r.stderr)
	}
}

// TestUnknownConfigKeyWarned: a typo'd key in config.json is named, with
// the nearest known one, instead of an allowlist vanishing in silence.
func TestUnknownConfigKeyWarned(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.writeConfig(`{"maxRetries": 0, "autoApprovedCommand": ["ls"]}`)
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "hi")
	wantSuccess(t, r)
	if !strings.Contains(r.stderr, `autoApprovedCommand is not a key jazz knows; did you mean "autoApprovedCommands"?`) {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

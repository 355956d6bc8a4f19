package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// Issue 13 item 9: an agent definition that cannot work is refused with
// the valid choices; update keeps the id (and so the conversations);
// delete takes the history with it.

func TestAgentCreateRefusesUnknown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown tools", []string{"--tools", "ls,bogus,LS,execute_write_file"},
			[]string{`"bogus" is not a tool`, `"LS" is not a tool (did you mean "ls"?)`, `"execute_write_file" is the hidden half of write_file`, "Valid tools: ", "read_file"}},
		{"unknown persona", []string{"--tools", "ls", "--persona", "wizard"}, []string{`unknown persona "wizard"`, "coder, default, researcher"}},
		{"empty tools", []string{"--tools", ""}, []string{"--tools names no tool"}},
		{"blank tools", []string{"--tools", " , "}, []string{"--tools names no tool"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"agent", "create", "--name", "a", "--model", "openai/gpt-4o-mini"}, c.args...)
			r := w.exec("", args...)
			if r.code != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			for _, want := range c.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "config.tools[0]") {
				t.Errorf("stderr speaks of the file, not the flag: %s", r.stderr)
			}
		})
	}
	for _, name := range []string{"a\tb", "a\x1b[31mb", "a\u202eb"} {
		r := w.exec("", "agent", "create", "--name", name, "--model", "openai/gpt-4o-mini", "--tools", "ls")
		if r.code != 1 || !strings.Contains(r.stderr, "control character") {
			t.Errorf("name %q: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
	if l := w.exec("", "agent", "list"); strings.TrimSpace(l.stdout) != "" {
		t.Fatalf("a refused agent was stored: %q", l.stdout)
	}
	// A configured custom tool is a valid name.
	w.writeConfig(`{"maxRetries": 0, "customTools": [{"name": "note", "description": "Record a note.", "handler": {"type": "record"}}]}`)
	if r := w.exec("", "agent", "create", "--name", "ok", "--model", "openai/gpt-4o-mini", "--tools", "ls,note,spawn_subagent"); r.code != 0 {
		t.Fatalf("valid agent refused: %s", r.stderr)
	}
}

func TestAgentUpdateKeepsID(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("one"), answer("two"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	id := w.agent("x", "read_file")
	if r := w.exec("", "run", "--agent", "x", "--json", "--conversation", "c1", "remember this"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	r := w.exec("", "agent", "update", "x", "--tools", "read_file,ls", "--model", "openai/gpt-4o", "--persona", "coder", "--system-prompt", "Be brief.")
	if r.code != 0 || strings.TrimSpace(r.stdout) != id {
		t.Fatalf("update: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var a struct {
		ID     string `json:"id"`
		Model  string `json:"model"`
		Config struct {
			Persona      string   `json:"persona"`
			Tools        []string `json:"tools"`
			LLMModel     string   `json:"llmModel"`
			SystemPrompt string   `json:"systemPrompt"`
		} `json:"config"`
	}
	show := w.exec("", "agent", "show", id)
	if err := json.Unmarshal([]byte(show.stdout), &a); err != nil {
		t.Fatal(err)
	}
	if a.ID != id || a.Model != "openai/gpt-4o" || a.Config.LLMModel != "gpt-4o" || a.Config.Persona != "coder" ||
		strings.Join(a.Config.Tools, ",") != "read_file,ls" || a.Config.SystemPrompt != "Be brief." {
		t.Fatalf("after update: %+v", a)
	}
	if r := w.exec("", "agent", "update", "x", "--tools", "nope"); r.code != 1 || !strings.Contains(r.stderr, `"nope" is not a tool`) {
		t.Fatalf("bad update: exit %d %s", r.code, r.stderr)
	}
	if r := w.exec("", "agent", "update", "x"); r.code != 1 || !strings.Contains(r.stderr, "nothing to change") {
		t.Fatalf("empty update: exit %d %s", r.code, r.stderr)
	}
	// The conversation is still the agent's: the next turn sends it.
	if r := w.exec("", "run", "--agent", "x", "--json", "--conversation", "c1", "again"); r.code != 0 {
		t.Fatalf("run after update: %s", r.stderr)
	}
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Messages; len(got) < 4 || !strings.Contains(*got[1].Content, "remember this") {
		t.Fatalf("history lost across update: %d messages", len(got))
	}

	hist := filepath.Join(w.home, "history", id+".json")
	if _, err := os.Stat(hist); err != nil {
		t.Fatalf("no history file: %v", err)
	}
	if r := w.exec("", "agent", "delete", "x"); r.code != 0 {
		t.Fatalf("delete: %s", r.stderr)
	}
	if _, err := os.Stat(hist); !os.IsNotExist(err) {
		t.Fatalf("history left behind after delete: %v", err)
	}
}

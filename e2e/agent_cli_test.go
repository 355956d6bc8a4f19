package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// The agent commands: create prints the id on stdout, list/show/delete
// find agents by id or name, and an agent can call only its listed tools.
func TestAgentCommands(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(
		calls(readFile("call_1", "notes.txt"), chatserver.Call{ID: "call_2", Name: "ls", Arguments: "{}"}),
		answer("done"),
	)
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.file("notes.txt", "hello")
	id := w.agent("reader", "read_file")
	if !agentIDPattern(id) {
		t.Fatalf("create should print only the id on stdout, got %q", id)
	}

	list := w.exec("", "agent", "list")
	if list.code != 0 || !strings.Contains(list.stdout, id+"\treader\topenai/gpt-4o-mini") {
		t.Fatalf("list: %+v", list)
	}
	for _, ref := range []string{id, "reader"} {
		show := w.exec("", "agent", "show", ref)
		var got struct {
			ID     string `json:"id"`
			Config struct {
				Tools []string `json:"tools"`
			} `json:"config"`
		}
		if show.code != 0 || json.Unmarshal([]byte(show.stdout), &got) != nil || got.ID != id || len(got.Config.Tools) != 1 {
			t.Fatalf("show %s: %+v", ref, show)
		}
	}

	// The model asks for ls, which the agent does not have: an error
	// result, not a tool run, and the run goes on.
	env := wantSuccess(t, w.exec("", "run", "--agent", "reader", "--json", "read notes"))
	if env.Answer != "done" {
		t.Fatalf("answer %q", env.Answer)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].HasTool("read_file") || reqs[0].HasTool("ls") {
		t.Fatalf("the model must be offered exactly the agent's tools: %+v", reqs)
	}
	toolMsgs := reqs[1].ToolMessages()
	if len(toolMsgs) != 2 || !strings.Contains(*toolMsgs[0].Content, "hello") || !strings.Contains(*toolMsgs[1].Content, "Unknown tool: ls") {
		t.Fatalf("tool results: %+v", toolMsgs)
	}

	dup := w.exec("", "agent", "create", "--name", "reader", "--model", "openai/gpt-4o-mini")
	if dup.code != 1 || dup.stdout != "" || !strings.Contains(dup.stderr, "already exists") {
		t.Fatalf("duplicate name: %+v", dup)
	}
	bad := w.exec("", "agent", "create", "--name", "x", "--model", "gpt-4o")
	if bad.code != 1 || !strings.Contains(bad.stderr, "provider/model") {
		t.Fatalf("bad model id: %+v", bad)
	}

	if del := w.exec("", "agent", "delete", "reader"); del.code != 0 {
		t.Fatalf("delete: %+v", del)
	}
	gone := w.exec("", "agent", "show", id)
	if gone.code != 1 || !strings.Contains(gone.stderr, "No agent found with ID: "+id) {
		t.Fatalf("show after delete: %+v", gone)
	}
}

func agentIDPattern(s string) bool {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, " \n") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

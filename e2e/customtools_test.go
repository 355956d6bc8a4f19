package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// setAgentConfig sets keys of an agent file's config, as a user editing
// it would.
func (w *world) setAgentConfig(id string, keys map[string]any) {
	w.t.Helper()
	p := filepath.Join(w.home, "agents", id+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		w.t.Fatal(err)
	}
	var a map[string]any
	if err := json.Unmarshal(b, &a); err != nil {
		w.t.Fatal(err)
	}
	cfg, _ := a["config"].(map[string]any)
	for k, v := range keys {
		cfg[k] = v
	}
	if b, err = json.Marshal(a); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func customDecls(marker string) []any {
	cmd := func(name string, argv []string, extra map[string]any) map[string]any {
		h := map[string]any{"type": "command", "command": argv}
		for k, v := range extra {
			h[k] = v
		}
		return map[string]any{"name": name, "description": "Run " + name + ".", "handler": h,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}
	}
	return []any{
		map[string]any{"name": "note", "description": "Record a note.", "handler": map[string]any{"type": "record"}},
		cmd("shout", []string{"tr", "a-z", "A-Z"}, nil),
		cmd("envdump", []string{"env"}, nil),
		cmd("sleepy", []string{"sleep", "30"}, map[string]any{"timeoutMs": 300}),
		cmd("touch", []string{"touch", marker}, nil),
	}
}

// Custom tools through jazz run: a record tool answers without a gate;
// command tools are gated, run approved with the arguments on stdin and
// the agent's scrubbed environment, time out, and run not at all when
// declined.
func TestCustomToolsRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	marker := filepath.Join(w.cwd, "touched")
	w.env = append(w.env, "SECRET_TOKEN=s3cr3t-value-1", "ALLOWED_TOKEN=a11owed-value-2", "PLAIN_VAR=plain")
	// Custom names are tools only once declared: the agent is created
	// with a built-in and given them with their declarations.
	id := w.agent("c", "read_file")
	w.setAgentConfig(id, map[string]any{"customTools": customDecls(marker), "envAllowlist": []string{"ALLOWED_TOKEN"},
		"tools": []string{"note", "shout", "envdump", "sleepy", "touch"}})

	srv := chatserver.New(
		calls(call("n1", "note", map[string]string{"text": "x"}),
			call("s1", "shout", map[string]string{"text": "hi"}),
			call("e1", "envdump", map[string]string{}),
			call("z1", "sleepy", map[string]string{})),
		answer("ok"))
	defer srv.Close()
	w.baseURL = srv.URL()
	r := w.exec("", "run", "--agent", "c", "--json", "--auto-approve-tools", "shout,envdump,sleepy", "go")
	e := wantSuccess(t, r)
	if len(e.ToolCalls) != 4 || e.ToolCalls[0].Name != "note" || e.ToolCalls[0].Arguments != `{"text":"x"}` {
		t.Errorf("toolCalls %+v", e.ToolCalls)
	}
	req := srv.Requests()[1]
	if got := toolResult(t, req, "n1"); got != "Recorded." {
		t.Errorf("note: %s", got)
	}
	if got := toolResult(t, req, "s1"); got != `{"TEXT":"HI"}`+"\n" {
		t.Errorf("shout: %q", got)
	}
	env := toolResult(t, req, "e1")
	if !strings.Contains(env, "PLAIN_VAR=plain") || !strings.Contains(env, "ALLOWED_TOKEN=") || strings.Contains(env, "SECRET_TOKEN") {
		t.Errorf("envdump:\n%s", env)
	}
	if got := toolResult(t, req, "z1"); !strings.Contains(got, "Command timed out after 300ms") {
		t.Errorf("sleepy: %s", got)
	}

	// Unattended, no approval: the command never runs.
	srv2 := chatserver.New(calls(call("t1", "touch", map[string]string{})), answer("declined"))
	defer srv2.Close()
	w.baseURL = srv2.URL()
	wantSuccess(t, w.exec("", "run", "--agent", "c", "--json", "go"))
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a declined command tool ran")
	}
	if got := toolResult(t, srv2.Requests()[1], "t1"); !strings.Contains(got, `"rejected":true`) {
		t.Fatalf("declined: %s", got)
	}
	// Approved, it does.
	srv3 := chatserver.New(calls(call("t2", "touch", map[string]string{})), answer("done"))
	defer srv3.Close()
	w.baseURL = srv3.URL()
	wantSuccess(t, w.exec("", "run", "--agent", "c", "--json", "--approval-policy", "high-risk", "go"))
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("an approved command tool did not run: %v", err)
	}
}

// A bad declaration fails the run before any model call, naming the
// field; so does a name a built-in has.
func TestCustomToolsConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		decls any
		want  string
	}{
		{[]any{map[string]any{"name": "x", "description": "d", "handler": map[string]any{"type": "record"}}}, "config.customTools[0].name x must match"},
		{[]any{map[string]any{"name": "deploy", "description": "d", "handler": map[string]any{"type": "webhook"}}}, `config.customTools[0].handler.type must be "record" or "command", got webhook`},
		{[]any{map[string]any{"name": "read_file", "description": "d", "handler": map[string]any{"type": "record"}}}, `custom tool "read_file" has the name of a built-in tool`},
		// The agent lists no git tool, so the run does not build them: the
		// name is taken all the same.
		{[]any{map[string]any{"name": "git_commit", "description": "d", "handler": map[string]any{"type": "record"}}}, `custom tool "git_commit" has the name of a built-in tool`},
		{[]any{map[string]any{"name": "execute_write_file", "description": "d", "handler": map[string]any{"type": "record"}}}, `custom tool "execute_write_file" has the name of a built-in tool`},
	}
	for _, tc := range cases {
		srv := chatserver.New(answer("never"))
		w := newWorld(t, srv.URL())
		id := w.agent("c", "read_file")
		w.setAgentConfig(id, map[string]any{"customTools": tc.decls})
		wantFailure(t, w.exec("", "run", "--agent", id, "--json", "go"), tc.want)
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%d model calls before the config error", n)
		}
		srv.Close()
	}
}

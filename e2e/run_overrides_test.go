package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// systemOf is the system message of a recorded request.
func systemOf(t *testing.T, req chatserver.Request) string {
	t.Helper()
	if len(req.Messages) == 0 || req.Messages[0].Role != "system" || req.Messages[0].Content == nil {
		t.Fatalf("request has no system message: %+v", req.Messages)
	}
	return *req.Messages[0].Content
}

// Issue 13 items 2 and 10: --model, --append-system-prompt, --cwd and
// --timezone change this run, and only it.
func TestRunOverrides(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(calls(readFile("c1", "note.txt")), answer("done"), answer("plain"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	sub := filepath.Join(w.cwd, "sub")
	w.file("sub/note.txt", "in the sub directory")
	r := w.exec("", "run", "--agent", "x", "--json", "--model", "openai/gpt-4.1-nano", "--append-system-prompt", "Answer in French.",
		"--cwd", "sub", "--timezone", "Asia/Tokyo", "go")
	wantSuccess(t, r)
	reqs := srv.Requests()
	if reqs[0].Model != "gpt-4.1-nano" {
		t.Errorf("model %q, want the --model one", reqs[0].Model)
	}
	sys := systemOf(t, reqs[0])
	for _, want := range []string{"Answer in French.", "The current working directory is " + sub + ".", "(timezone Asia/Tokyo)"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	// read_file's relative path resolved in --cwd.
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Content == nil || !strings.Contains(*last.Content, "in the sub directory") {
		t.Errorf("tool result %+v", last)
	}
	// The next run is the agent's own again.
	wantSuccess(t, w.exec("", "run", "--agent", "x", "--json", "again"))
	reqs = srv.Requests()
	if sys := systemOf(t, reqs[2]); reqs[2].Model != "gpt-4o-mini" || strings.Contains(sys, "French") || !strings.Contains(sys, "(timezone UTC)") {
		t.Errorf("overrides outlived their run: model %q\n%s", reqs[2].Model, sys)
	}

	for _, c := range []struct{ flag, value, want string }{
		{"--cwd", "missing", `Invalid --cwd "missing"`},
		{"--cwd", "sub/note.txt", "not a directory"},
		{"--model", "nomodel", "Invalid --model"},
		{"--timezone", "Mars/Olympus", `Invalid --timezone "Mars/Olympus"`},
	} {
		wantFailure(t, w.exec("", "run", "--agent", "x", "--json", c.flag, c.value, "hi"), c.want)
	}
}

// Issue 13 item 13d: a persona's instructions reach the model, a custom
// one included, in the original's JAZZ_HOME/personas/<name>/persona.md;
// and an agent's own systemPrompt replaces the built-in instructions.
func TestPersonaInstructions(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("a"), answer("b"), answer("c"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	dir := filepath.Join(w.home, "personas", "pirate")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "persona.md"), []byte("---\nname: pirate\ndescription: talks like one\n---\nSpeak like a pirate, always.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"coder", "coder"}, {"pirate", "pirate"}} {
		if r := w.exec("", "agent", "create", "--name", a[0], "--model", "openai/gpt-4o-mini", "--tools", "read_file", "--persona", a[1]); r.code != 0 {
			t.Fatalf("create %s: %s", a[0], r.stderr)
		}
	}
	if r := w.exec("", "agent", "create", "--name", "own", "--model", "openai/gpt-4o-mini", "--tools", "read_file", "--system-prompt", "You are a terse bot."); r.code != 0 {
		t.Fatalf("create own: %s", r.stderr)
	}
	for _, name := range []string{"coder", "pirate", "own"} {
		wantSuccess(t, w.exec("", "run", "--agent", name, "--json", "hi"))
	}
	reqs := srv.Requests()
	if sys := systemOf(t, reqs[0]); !strings.Contains(sys, "You are working as a coder.") {
		t.Errorf("coder's instructions missing:\n%s", sys)
	}
	if sys := systemOf(t, reqs[1]); !strings.Contains(sys, "Speak like a pirate, always.") {
		t.Errorf("persona.md's instructions missing:\n%s", sys)
	}
	if sys := systemOf(t, reqs[2]); !strings.HasPrefix(sys, "You are a terse bot.") || strings.Contains(sys, "an AI agent run by jazz") {
		t.Errorf("the agent's systemPrompt did not replace the built-in one:\n%s", sys)
	}
}

// Issue 13 item 13e: tools an agent file lists that jazz does not have
// are named once at the start, not dropped silently.
func TestUnknownToolsNamedOnce(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("ok"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	id := w.agent("x", "read_file")
	w.setAgentConfig(id, map[string]any{"tools": []string{"read_file", "web_search", "calendar_list", "execute_write_file"}})
	r := w.exec("", "run", "--agent", "x", "--json", "hi")
	wantSuccess(t, r)
	if n := strings.Count(r.stderr, "jazz does not have"); n != 1 {
		t.Fatalf("warned %d times:\n%s", n, r.stderr)
	}
	for _, want := range []string{"3 tool(s)", "web_search", "calendar_list", "execute_write_file (list write_file)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("warning lacks %q:\n%s", want, r.stderr)
		}
	}
}

// Issue 13 item 13b: --ephemeral keeps nothing and puts the transcript in
// the envelope; passed back as --history-json, it is the conversation.
func TestEphemeralHistoryJSON(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(answer("first"), answer("second"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.agent("x", "read_file")
	r := w.exec("", "run", "--agent", "x", "--json", "--ephemeral", "my name is Ada")
	wantSuccess(t, r)
	var env struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || len(env.Messages) != 2 {
		t.Fatalf("messages: %v %s", err, r.stdout)
	}
	if strings.Contains(string(env.Messages[0]), `"system"`) || !strings.Contains(string(env.Messages[1]), "first") {
		t.Fatalf("messages %s", env.Messages)
	}
	hist, _ := json.Marshal(env.Messages)
	r = w.exec("", "run", "--agent", "x", "--json", "--ephemeral", "--history-json", string(hist), "what is my name?")
	wantSuccess(t, r)
	req := srv.Requests()[1]
	if len(req.Messages) != 4 || !strings.Contains(*req.Messages[1].Content, "my name is Ada") || *req.Messages[2].Content != "first" {
		t.Fatalf("second request: %+v", req.Messages)
	}
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || len(env.Messages) != 4 {
		t.Fatalf("second envelope: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(w.home, "history")); !os.IsNotExist(err) {
		t.Errorf("an ephemeral run wrote history: %v", err)
	}
	wantFailure(t, w.exec("", "run", "--agent", "x", "--json", "--ephemeral", "--conversation", "c", "hi"), "--ephemeral keeps nothing")
	wantFailure(t, w.exec("", "run", "--agent", "x", "--json", "--history-json", "{}", "hi"), "--history-json must be a JSON array")
	wantFailure(t, w.exec("", "run", "--agent", "x", "--json", "--history-json", `[{"role":"wizard","content":"x"}]`, "hi"), `role "wizard"`)
}

// Issue 13 item 13d: the agent's own persona narrows its tools as it
// narrows a subagent's — its tools list, then its denies. A researcher
// agent is never offered write_file or execute_command, and a write the
// model names anyway runs nothing; a persona file's tools and deny do the
// same; the default persona keeps the agent's list.
func TestPersonaNarrowsTheAgentsTools(t *testing.T) {
	t.Parallel()
	write := chatserver.Call{ID: "w1", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "pwned.txt", "content": "x"})}
	srv := chatserver.New(calls(write), answer("a"), answer("b"), answer("c"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	if err := os.MkdirAll(filepath.Join(w.home, "personas"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, "personas", "lister.json"),
		[]byte(`{"name":"lister","tools":["ls","read_file"],"deny":["read_file"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	all := "read_file,ls,write_file,execute_command"
	for _, a := range [][]string{{"res", "researcher"}, {"lis", "lister"}, {"plain", "default"}} {
		if r := w.exec("", "agent", "create", "--name", a[0], "--model", "openai/gpt-4o-mini", "--tools", all, "--persona", a[1]); r.code != 0 {
			t.Fatalf("create %s: %s", a[0], r.stderr)
		}
	}
	r := w.exec("", "run", "--agent", "res", "--json", "--approval-policy", "high-risk", "write it")
	if r.code != 0 {
		t.Fatalf("researcher run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.cwd, "pwned.txt")); err == nil {
		t.Fatal("a researcher agent wrote a file")
	}
	for _, name := range []string{"lis", "plain"} {
		wantSuccess(t, w.exec("", "run", "--agent", name, "--json", "hi"))
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	offered := func(req chatserver.Request) map[string]bool {
		m := map[string]bool{}
		for _, tool := range []string{"read_file", "ls", "write_file", "execute_command"} {
			m[tool] = req.HasTool(tool)
		}
		return m
	}
	for i, want := range []map[string]bool{
		{"read_file": true, "ls": true}, // researcher
		{"read_file": true, "ls": true}, // its answer after the refused write
		{"ls": true},                    // lister: its tools, minus its deny
		{"read_file": true, "ls": true, "write_file": true, "execute_command": true}, // default
	} {
		got := offered(reqs[i])
		for tool, has := range got {
			if has != want[tool] {
				t.Errorf("request %d: %s offered=%v, want %v", i, tool, has, want[tool])
			}
		}
	}
}

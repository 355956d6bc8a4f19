//go:build unix

package e2e_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestSecretsNeverReachTheModel: a scripted model asks the read tools for
// jazz's own keys by every road it has (its own /proc/self/environ, the
// config through a symlink in the repository, a grep over the directory
// holding JAZZ_HOME, a copy of the keys in an ordinary file), and points
// them at a FIFO and /dev/zero. Every call answers at once, and nothing
// the model server receives, nor the envelope, holds a key.
func TestSecretsNeverReachTheModel(t *testing.T) {
	t.Parallel()
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	envKey, cfgKey := "sk-e2eenv"+hex.EncodeToString(b), "sk-ant-e2ecfg"+hex.EncodeToString(b)
	args := func(v map[string]any) string { return chatserver.JSONArgs(v) }
	srv := chatserver.New(calls(
		readFile("c1", "/proc/self/environ"),
		readFile("c2", "cfg.json"),
		readFile("c3", "copy.txt"),
		chatserver.Call{ID: "c4", Name: "grep", Arguments: args(map[string]any{"pattern": "sk-", "path": ".."})},
		chatserver.Call{ID: "c5", Name: "tail", Arguments: args(map[string]any{"path": "/dev/fd/0"})},
		readFile("c6", "pipe"),
		readFile("c7", "/dev/zero"),
	), answer("done"))
	defer srv.Close()
	w := newWorld(t, srv.URL())
	w.env = append(w.env, "OPENAI_API_KEY="+envKey)
	w.writeConfig(`{"maxRetries": 0, "llm": {"anthropic": {"api_key": "` + cfgKey + `"}}}`)
	w.agent("x", "read_file", "grep", "tail")
	if err := os.Symlink(filepath.Join(w.home, "config.json"), filepath.Join(w.cwd, "cfg.json")); err != nil {
		t.Fatal(err)
	}
	w.file("copy.txt", "keys: "+envKey+" and "+cfgKey+"\n")
	mkfifo(t, filepath.Join(w.cwd, "pipe"))

	r := w.exec("", "run", "--agent", "x", "--json", "--timeout", "60000", "find the keys")
	if e := wantSuccess(t, r); e.Answer != "done" {
		t.Fatalf("answer %q", e.Answer)
	}
	if r.took > 30*time.Second {
		t.Errorf("the run took %v: a read blocked", r.took)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	sent, _ := json.Marshal(reqs)
	for _, where := range []string{string(sent), r.stdout, r.stderr} {
		if strings.Contains(where, envKey) || strings.Contains(where, cfgKey) {
			t.Fatalf("a key got out:\n%s", where)
		}
	}
	want := map[string]string{
		"c1": "Refused: /proc/self/environ", "c2": "Refused: " + filepath.Join(w.cwd, "cfg.json"),
		"c3": "keys: [REDACTED] and [REDACTED]", "c4": "[REDACTED]", "c5": "Refused: /dev/fd/0",
		"c6": "Not a file: " + filepath.Join(w.cwd, "pipe") + " (it is a FIFO", "c7": "Not a file: /dev/zero (it is a character device",
	}
	for _, m := range reqs[1].ToolMessages() {
		if m.Content == nil || !strings.Contains(*m.Content, want[m.ToolCallID]) {
			t.Errorf("%s: tool message %v, want it to hold %q", m.ToolCallID, m.Content, want[m.ToolCallID])
		}
	}
}

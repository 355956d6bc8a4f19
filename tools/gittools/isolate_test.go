package gittools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestHooksCannotReadJazzSecrets: under high-risk a repository's hooks
// run, but in a view where JAZZ_HOME is empty (package isolate).
func TestHooksCannotReadJazzSecrets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const secret = "sk-hook-must-not-see-0123456789"
	writeFile(t, filepath.Join(w.env.JazzHome, "config.json"), `{"api_key":"`+secret+`"}`)
	out := filepath.Join(t.TempDir(), "seen")
	dir := w.repo("r")
	hook := "#!/bin/sh\necho ran > '" + out + "'\ncat '" + filepath.Join(w.env.JazzHome, "config.json") + "' >> '" + out + "' 2>&1\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env.WorkDir = dir
	setPolicy(w, messages.PolicyHighRisk)
	writeFile(t, filepath.Join(dir, "README"), "changed\n")
	ok(t, w.approve(w.propose("git_commit", map[string]any{"message": "hook", "all": true})))
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), "ran") {
		t.Fatalf("the hook did not run: %v %q", err, b)
	}
	if strings.Contains(string(b), secret) {
		t.Fatalf("the hook read JAZZ_HOME: %q", b)
	}
}

package childproc

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/isolate"
)

// TestHiddenPaths: a program started with paths to hide runs where they
// are empty, under the reaper, and its status still comes through.
func TestHiddenPaths(t *testing.T) {
	var iso isolate.Isolator
	if iso.Mode(context.Background()) == isolate.None {
		t.Skipf("no isolation here: %s", iso.Why(context.Background()))
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte("sk-child-must-not-see-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(script, []byte("cat "+home+"/config.json; ls -A "+home+"; echo end; exit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	p, err := Start(Spec{Argv: []string{"sh", script}, Env: []string{"PATH=/usr/bin:/bin"}, Hide: []string{home}, Isolator: &iso, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(p.Stdout())
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the program did not end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Stop(ctx, 0)
	if strings.Contains(string(out)+stderr.String(), "sk-child") || strings.TrimSpace(string(out)) != "end" {
		t.Fatalf("stdout %q stderr %q", out, stderr.String())
	}
	if p.ExitCode() != 3 {
		t.Fatalf("exit %d (%s), want 3", p.ExitCode(), p.Exit())
	}
}

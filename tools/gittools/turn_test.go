package gittools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// TestGitTwinsActOneAtATime: a git twin holds the run's turn to change
// files (Env.Acts) from its checks to its act, as the file twins do: a
// git twin and a file twin of one batch run at once, and a write between
// the git twin's check of the index and its commit would land unseen.
// Every twin waits for a held turn; one whose call ends waiting changes
// nothing and says so; a real git_add stages only once the turn is free.
func TestGitTwinsActOneAtATime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.repo("r")
	w.env.WorkDir = dir
	w.env.Acts = tools.NewTurn()
	writeFile(t, dir+"/new.txt", "new\n")
	p := w.propose("git_add", map[string]any{"files": []string{"new.txt"}})

	release, err := w.env.Acts.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	twins := 0
	for _, name := range w.reg.Names() {
		tl, _ := w.reg.Lookup(name)
		if !tl.Hidden {
			continue
		}
		twins++
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		r := tl.Handler(ctx, w.env, json.RawMessage(`{}`))
		cancel()
		if r.Success || !strings.Contains(r.Error, "Nothing was changed") {
			t.Errorf("%s ran while another twin held the turn: %+v", tl.Name, r)
		}
	}
	if twins != 8 {
		t.Errorf("%d git twins, want 8", twins)
	}

	twin, _ := w.reg.Lookup(p.Approval.ExecuteToolName)
	out := make(chan tools.Result, 1)
	go func() { out <- twin.Handler(context.Background(), w.env, p.Approval.ExecuteArgs) }()
	select {
	case r := <-out:
		t.Fatalf("git_add acted while another twin held the turn: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	if st := w.git(dir, "status", "--short"); st != "?? new.txt" {
		t.Fatalf("staged while the turn was held: %q", st)
	}
	release()
	select {
	case r := <-out:
		ok(t, r)
	case <-time.After(30 * time.Second):
		t.Fatal("git_add did not act within 30 s of the turn being free")
	}
	if st := w.git(dir, "status", "--short"); st != "A  new.txt" {
		t.Errorf("status after the turn: %q", st)
	}
}

package writetools

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/tools"
)

// TestTwinsActOneAtATime: a twin changes nothing while another twin of
// the run holds the run's turn (Env.Acts), acts once it is free, and one
// whose call ends while it waits changes nothing and says so. Between a
// twin's checks and its act no other twin of the run may act: the calls
// of a batch, and sub-agents, run at once.
func TestTwinsActOneAtATime(t *testing.T) {
	for _, c := range []struct {
		tool string
		args map[string]any
		done func(h *harness) bool
	}{
		{"write_file", map[string]any{"path": "n.txt", "content": "x\n"}, func(h *harness) bool { return exists(h.path("n.txt")) }},
		{"edit_file", map[string]any{"path": "e.txt", "edits": []any{map[string]any{"type": "insert", "line": 1, "content": "y"}}},
			func(h *harness) bool { return strings.Contains(h.read("e.txt"), "y") }},
		{"mkdir", map[string]any{"path": "d"}, func(h *harness) bool { return exists(h.path("d")) }},
		{"rm", map[string]any{"path": "e.txt"}, func(h *harness) bool { return !exists(h.path("e.txt")) }},
		{"mv", map[string]any{"source": "e.txt", "destination": "m.txt"}, func(h *harness) bool { return exists(h.path("m.txt")) }},
		{"cp", map[string]any{"source": "e.txt", "destination": "c.txt"}, func(h *harness) bool { return exists(h.path("c.txt")) }},
	} {
		t.Run(c.tool, func(t *testing.T) {
			h := newHarness(t)
			h.env.Acts = tools.NewTurn()
			h.write("e.txt", "a\n")
			p := h.propose(c.tool, c.args)
			if p.Approval == nil {
				t.Fatalf("propose: %+v", p)
			}
			release, err := h.env.Acts.Take(context.Background())
			if err != nil {
				t.Fatal(err)
			}

			// While another twin holds the turn, a twin whose call ends
			// waiting changes nothing.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			res := h.approveCtx(ctx, p)
			cancel()
			if res.Success || !strings.Contains(res.Error, "Nothing was changed") || c.done(h) {
				t.Fatalf("a twin that never had the turn: %+v (done: %v)", res, c.done(h))
			}

			// One that waits acts only once the turn is free.
			out := make(chan tools.Result, 1)
			go func() { out <- h.callCtx(context.Background(), p.Approval.ExecuteToolName, p.Approval.ExecuteArgs) }()
			select {
			case r := <-out:
				t.Fatalf("the twin acted while another held the turn: %+v", r)
			case <-time.After(100 * time.Millisecond):
			}
			if c.done(h) {
				t.Fatal("the twin changed the file system while another held the turn")
			}
			release()
			select {
			case r := <-out:
				if !r.Success || !c.done(h) {
					t.Fatalf("after the turn was free: %+v (done: %v)", r, c.done(h))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the twin did not act within 10 s of the turn being free")
			}
		})
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

package writetools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jazz-run/jazz/tools"
)

// stopAfter is a context whose Err turns to DeadlineExceeded after n
// looks: a twin whose time limit runs out at its n-th check.
type stopAfter struct {
	context.Context
	n atomic.Int64
}

func newStopAfter(n int) *stopAfter {
	c := &stopAfter{Context: context.Background()}
	c.n.Store(int64(n))
	return c
}

func (c *stopAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// leftovers lists hidden work files a twin left under dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".jazz-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestTwinsStopWhenTheirContextEnds stops every twin at each of its
// checks in turn. Stopped, a twin says so and has either changed nothing
// (write, edit, mkdir, cp, mv: the partial work is undone) or, for a
// removal it cannot undo, says how far it got and where the rest is.
// Never does it report failure and then change anything afterwards.
func TestTwinsStopWhenTheirContextEnds(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", chunk/16+7) // two chunks
	tree := func(h *harness) {
		for _, f := range []string{"t/a", "t/b", "t/sub/c", "t/sub/d", "t/sub/deep/e"} {
			h.write(f, f+"\n")
		}
		must(h.t, os.Symlink("a", h.path("t/ln")))
		h.write("old/x", "x")
		h.write("old/y/z", "z")
	}
	cases := []struct {
		tool  string
		args  E
		setup func(h *harness)
		// undoable: a stopped twin leaves the tree exactly as it was
		undoable bool
	}{
		{"write_file", E{"path": "new/deeper/f", "content": big, "createDirs": true}, func(*harness) {}, true},
		{"edit_file", E{"path": "big", "edits": []E{{"type": "insert", "line": 0, "content": "top"}}}, func(h *harness) { h.write("big", big) }, true},
		{"mkdir", E{"path": "made"}, tree, true},
		{"cp", E{"source": "t", "destination": "copy"}, tree, true},
		{"cp", E{"source": "t", "destination": "old", "force": true}, tree, false},
		{"mv", E{"source": "t", "destination": "old", "force": true}, tree, false},
		{"rm", E{"path": "t", "recursive": true}, tree, false},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+valueJSON(t, c.args)[:min(60, len(valueJSON(t, c.args)))], func(t *testing.T) {
			var h *harness
			var r *tools.Result
			for k := 0; ; k++ {
				if k > 5000 {
					t.Fatal("never finished")
				}
				// A stopped undoable twin leaves the tree as it was, so
				// its approval is tried again on it (and large contents
				// are not encoded again for each k).
				if h == nil || !c.undoable {
					h = newHarness(t)
					c.setup(h)
					r = h.propose(c.tool, c.args)
				}
				before := contentHash(t, h.root)
				var res tools.Result
				if k == 0 {
					res = h.approveCtx(newStopAfter(k), r)
				} else { // validated once is enough
					res = h.run(newStopAfter(k), r.Approval.ExecuteToolName, r.Approval.ExecuteArgs)
				}
				if res.Success {
					if k == 0 {
						t.Fatal("succeeded without looking at its context")
					}
					if l := leftovers(t, h.root); len(l) > 0 {
						t.Fatalf("k=%d: left %v", k, l)
					}
					return
				}
				if !strings.Contains(res.Error, "because the tool's time limit was reached") {
					t.Fatalf("k=%d: failure does not say it was stopped: %+v", k, res)
				}
				if c.undoable || strings.Contains(res.Error, "Nothing was changed") {
					if !strings.Contains(res.Error, "Nothing was") && !strings.Contains(res.Error, "No edit was made") {
						t.Fatalf("k=%d: %q does not say nothing changed", k, res.Error)
					}
					if got := contentHash(t, h.root); got != before {
						t.Fatalf("k=%d: stopped twin %q changed the tree:\n%s\n---\n%s", k, res.Error, before, got)
					}
					continue
				}
				// A removal stopped half way: the message says where the
				// rest is, and it is there.
				i := strings.LastIndex(res.Error, " at ")
				if i < 0 || !strings.HasSuffix(res.Error, ".") {
					t.Fatalf("k=%d: %q does not say where the rest is", k, res.Error)
				}
				rest := strings.TrimSuffix(res.Error[i+len(" at "):], ".")
				if _, err := os.Lstat(rest); err != nil {
					t.Fatalf("k=%d: %q: %v", k, res.Error, err)
				}
			}
		})
	}
}

// TestMoveAcrossFilesystems runs the copy-then-remove path of mv (taken
// on EXDEV), whole and stopped at each check.
func TestMoveAcrossFilesystems(t *testing.T) {
	for k := 1; ; k++ {
		if k > 5000 {
			t.Fatal("never finished")
		}
		h := newHarness(t)
		h.write("t/a", "a")
		h.write("t/sub/b", "b")
		m := mvOp()
		s, d, err := m.targets(context.Background(), guardOf(h.env), h.path("t"), h.path("dst"))
		must(t, err)
		res := m.moveAcross(newStopAfter(k), s, d)
		s.close()
		d.close()
		if l := leftovers(t, h.root); len(l) > 0 {
			t.Fatalf("k=%d: left %v (%+v)", k, l, res)
		}
		if res.Success {
			if _, err := os.Lstat(h.path("t")); !os.IsNotExist(err) || h.read("dst/sub/b") != "b" {
				t.Fatalf("not moved: %+v", res)
			}
			return
		}
		_, srcErr := os.Lstat(h.path("t"))
		_, dstErr := os.Lstat(h.path("dst"))
		switch {
		case strings.Contains(res.Error, "Nothing was changed"):
			if srcErr != nil || dstErr == nil {
				t.Fatalf("k=%d: %q but src %v dst %v", k, res.Error, srcErr, dstErr)
			}
		case strings.Contains(res.Error, "removing the source did not finish"):
			if dstErr != nil || h.read("dst/sub/b") != "b" || !strings.Contains(res.Error, "what remains is back at "+h.path("t")) {
				t.Fatalf("k=%d: %q", k, res.Error)
			}
		default:
			t.Fatalf("k=%d: %+v", k, res)
		}
	}
}

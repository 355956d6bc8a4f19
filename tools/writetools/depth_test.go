//go:build unix

package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoToolMakesATreeDeeperThanItsOwnWalks: rm, mv and cp refuse a tree
// more than maxTreeDepth directories deep, so write_file with createDirs
// (one call, 600 levels), mkdir, cp and mv must not make one: before the
// bound, write_file built 600 levels that jazz's own rm -r then could not
// remove. Each is refused, propose half and twin, with what the limit
// is, and nothing is made; right at the limit, what is made rm -r
// removes.
func TestNoToolMakesATreeDeeperThanItsOwnWalks(t *testing.T) {
	h := newHarness(t)
	base := strings.Count(h.root, "/") // the root's own depth below /
	deep := func(n int) string { return strings.TrimSuffix(strings.Repeat("d/", n), "/") }
	for _, c := range []struct {
		tool string
		args E
	}{
		{"write_file", E{"path": deep(600) + "/f", "content": "x", "createDirs": true}},
		{"write_file", E{"path": deep(maxTreeDepth-base) + "/f", "content": "x", "createDirs": true}},
	} {
		r := h.call(c.tool, c.args)
		if r.Approval != nil || !strings.Contains(r.Error, "more than the 512") {
			t.Errorf("%s %.60v: %.300s", c.tool, c.args["path"], r.Error)
		}
		if exists(h.path("d")) {
			t.Fatalf("%s made directories", c.tool)
		}
	}

	// Right at the limit: made, and removed again by rm -r.
	at := deep(maxTreeDepth-base-1) + "/f"
	if r := h.approve(h.propose("write_file", E{"path": at, "content": "x", "createDirs": true})); !r.Success {
		t.Fatalf("write_file at the limit: %.300s", r.Error)
	}
	if r := h.approve(h.propose("mkdir", E{"path": filepath.Dir(at) + "/e"})); !r.Success {
		t.Fatalf("mkdir at the limit: %.300s", r.Error)
	}
	must(t, os.MkdirAll(h.path("src/a/b"), 0o755))
	for _, c := range []struct {
		tool string
		args E
	}{
		{"mkdir", E{"path": filepath.Dir(at) + "/e/g"}},
		{"cp", E{"source": "src", "destination": filepath.Dir(filepath.Dir(at)) + "/c"}},
		{"mv", E{"source": "src", "destination": filepath.Dir(filepath.Dir(at)) + "/c"}},
	} {
		r := h.call(c.tool, c.args)
		if r.Approval != nil || !strings.Contains(r.Error, "more than the 512") {
			t.Errorf("%s: %.300s", c.tool, r.Error)
		}
	}
	// A twin holding arguments from before the bound is refused alike.
	raw := mustJSON(t, E{"path": h.path(deep(600) + "/f"), "content": "x", "createDirs": true, "expectedState": "x"})
	if r := h.run(t.Context(), "execute_write_file", raw); r.Success || exists(h.path(deep(maxTreeDepth-base))) {
		t.Errorf("the twin of a too deep write: %.300s", r.Error)
	}
	if r := h.approve(h.propose("rm", E{"path": "d", "recursive": true})); !r.Success || exists(h.path("d")) {
		t.Fatalf("rm -r of what write_file made at the limit: %.300s", r.Error)
	}
}

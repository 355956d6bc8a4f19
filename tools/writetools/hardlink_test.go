//go:build unix

package writetools

import (
	"os"
	"strings"
	"testing"
)

// TestWriteToAHardLinkSaysTheOtherNamesKeepTheOldContent: a write or an
// edit replaces the file by a rename, so the other names of a file with
// hard links keep the old content; the approval said only "write" (an
// editor that writes in place changes every name), and now says so.
func TestWriteToAHardLinkSaysTheOtherNamesKeepTheOldContent(t *testing.T) {
	h := newHarness(t)
	h.write("a.txt", "old\n")
	must(t, os.Link(h.path("a.txt"), h.path("b.txt")))
	for _, c := range []struct {
		tool string
		args E
	}{
		{"write_file", E{"path": "a.txt", "content": "new\n"}},
		{"edit_file", E{"path": "a.txt", "edits": []any{E{"type": "insert", "line": 0, "content": "new"}}}},
	} {
		p := h.propose(c.tool, c.args)
		if !strings.Contains(p.Approval.Message, "has 2 names (hard links)") || !strings.Contains(p.Approval.Message, "this name only; the other keeps the old content") {
			t.Errorf("%s: the message does not say the other name keeps the old content: %s", c.tool, p.Approval.Message)
		}
	}
	if r := h.approve(h.propose("write_file", E{"path": "a.txt", "content": "new\n"})); !r.Success {
		t.Fatalf("write: %+v", r)
	}
	if h.read("b.txt") != "old\n" || h.read("a.txt") != "new\n" {
		t.Errorf("a.txt %q, b.txt %q", h.read("a.txt"), h.read("b.txt"))
	}
	if p := h.propose("write_file", E{"path": "a.txt", "content": "again\n"}); strings.Contains(p.Approval.Message, "hard links") {
		t.Errorf("a file with one name: %s", p.Approval.Message)
	}
}

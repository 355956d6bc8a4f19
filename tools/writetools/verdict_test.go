package writetools

import (
	"os"
	"strings"
	"testing"
)

// TestTwinRefusesWhatWouldNowNeedAPerson: who may approve a change is
// part of what was approved. A call judged on a directory that was plain
// at its preview (any approval may approve it) must not run once the
// directory has become one only a person may change, even though the
// target itself is as the preview saw it. Here another call of the same
// batch (one a person approved, or any step between) gave the directory
// a HEAD, which makes git take it for a repository's own directory:
// without this, the config, hook or objects written next to it went in
// on an allowlisting the person never saw.
func TestTwinRefusesWhatWouldNowNeedAPerson(t *testing.T) {
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "d/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}},
		{"write_file", map[string]any{"path": "d/hooks/post-checkout", "content": "#!/bin/sh\n", "createDirs": true}},
		{"edit_file", map[string]any{"path": "d/old", "edits": []map[string]any{{"type": "insert", "line": 0, "content": "x"}}}},
		{"mkdir", map[string]any{"path": "d/objects"}},
		{"rm", map[string]any{"path": "d/old"}},
		{"mv", map[string]any{"source": "src.txt", "destination": "d/config"}},
		{"mv", map[string]any{"source": "d/old", "destination": "moved"}},
		{"cp", map[string]any{"source": "src.txt", "destination": "d/config"}},
	} {
		h := newHarness(t)
		h.write("d/old", "old\n")
		h.write("src.txt", "[core]\n")
		r := h.propose(c.name, c.args)
		if r.Approval.HumanOnly != "" {
			t.Fatalf("%s %v: already human-only at its preview: %s", c.name, c.args, r.Approval.HumanOnly)
		}
		// The other call of the batch: a HEAD beside the target.
		must(t, os.WriteFile(h.path("d/HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		mid := contentHash(t, h.root)
		res := h.approve(r)
		if res.Success || !strings.Contains(res.Error, "changed since the preview was approved") {
			t.Errorf("%s %v: the twin ran in a directory only a person may now change: %+v", c.name, c.args, res)
		}
		if after := contentHash(t, h.root); after != mid {
			t.Errorf("%s %v: the refused twin changed the tree", c.name, c.args)
		}
	}
}

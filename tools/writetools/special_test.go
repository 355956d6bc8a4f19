package writetools

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The preview of a write or edit reads the existing file: a FIFO there
// must not block it, nor /dev/zero run it out of memory.
func TestPreviewRefusesSpecialFiles(t *testing.T) {
	h := newHarness(t)
	fifo := filepath.Join(h.root, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": fifo, "content": "x"}},
		{"edit_file", map[string]any{"path": fifo, "edits": []any{map[string]any{"type": "insert", "line": 1, "content": "x"}}}},
		{"write_file", map[string]any{"path": "/dev/zero", "content": "x"}},
		{"edit_file", map[string]any{"path": "/dev/zero", "edits": []any{map[string]any{"type": "insert", "line": 1, "content": "x"}}}},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := h.call(c.tool, c.args)
			if r.Success || r.Approval != nil || !strings.Contains(r.Error, "not a regular file") {
				t.Errorf("%s %v: success %v, approval %v, error %q", c.tool, c.args["path"], r.Success, r.Approval != nil, r.Error)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %v: the preview is still blocked after 10s", c.tool, c.args["path"])
		}
	}
}

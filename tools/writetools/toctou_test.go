package writetools

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestTwinRefusesAnyChangeOfWhatThePreviewRead races every kind of
// change an adversary can make to a write's target between the propose
// half and its twin: the leaf's mode, identity (a hard link, a copy with
// the same bytes, a FIFO), content behind a restored time, and the path
// itself (the leaf or its directory swapped for a link out of the
// workspace, to a file with the same content). Whatever the twin would
// write then differs from what the person approved in some respect (the
// file's mode, which file it is, where it is), so it must refuse, and
// write nothing anywhere.
func TestTwinRefusesAnyChangeOfWhatThePreviewRead(t *testing.T) {
	const old = "line one\nline two\n"
	mutations := []struct {
		name   string
		change func(h *harness, target, outside string)
	}{
		{"mode made executable", func(h *harness, p, _ string) { must(h.t, os.Chmod(p, 0o755)) }},
		{"mode made world-writable", func(h *harness, p, _ string) { must(h.t, os.Chmod(p, 0o666)) }},
		{"replaced by a hard link of an outside file with the same bytes", func(h *harness, p, out string) {
			must(h.t, os.WriteFile(filepath.Join(out, "twin"), []byte(old), 0o644))
			must(h.t, os.Remove(p))
			must(h.t, os.Link(filepath.Join(out, "twin"), p))
		}},
		{"replaced by a new file with the same bytes", func(h *harness, p, _ string) {
			must(h.t, os.Remove(p))
			must(h.t, os.WriteFile(p, []byte(old), 0o644))
		}},
		{"rewritten in place, size and time restored", func(h *harness, p, _ string) {
			fi, err := os.Stat(p)
			must(h.t, err)
			must(h.t, os.WriteFile(p, []byte("LINE ONE\nline two\n"), 0o644))
			must(h.t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}},
		{"replaced by a FIFO", func(h *harness, p, _ string) {
			must(h.t, os.Remove(p))
			must(h.t, syscall.Mkfifo(p, 0o644))
		}},
		{"leaf swapped for a link to an outside file with the same bytes", func(h *harness, p, out string) {
			must(h.t, os.WriteFile(filepath.Join(out, "authorized_keys"), []byte(old), 0o600))
			must(h.t, os.Remove(p))
			must(h.t, os.Symlink(filepath.Join(out, "authorized_keys"), p))
		}},
		{"directory swapped for a link to an outside directory holding the same file", func(h *harness, p, out string) {
			must(h.t, os.WriteFile(filepath.Join(out, filepath.Base(p)), []byte(old), 0o644))
			must(h.t, os.Rename(filepath.Dir(p), filepath.Dir(p)+".moved"))
			must(h.t, os.Symlink(out, filepath.Dir(p)))
		}},
		{"directory swapped for another real directory holding the same file", func(h *harness, p, _ string) {
			d := filepath.Dir(p)
			must(h.t, os.Rename(d, d+".moved"))
			must(h.t, os.Mkdir(d, 0o755))
			must(h.t, os.WriteFile(p, []byte(old), 0o644))
		}},
	}
	tools := []struct {
		name string
		args func(path string) E
	}{
		{"write_file", func(p string) E { return E{"path": p, "content": "new\n"} }},
		{"edit_file", func(p string) E {
			return E{"path": p, "edits": []E{{"type": "replace_pattern", "pattern": "two", "replacement": "2"}}}
		}},
	}
	for _, tool := range tools {
		for _, m := range mutations {
			t.Run(tool.name+"/"+m.name, func(t *testing.T) {
				h := newHarness(t)
				outside := t.TempDir() // ~/.ssh, .git/hooks, JAZZ_HOME: anywhere else
				target := h.write("repo/sub/f.txt", old)
				r := h.propose(tool.name, tool.args("repo/sub/f.txt"))
				m.change(h, target, outside)
				inside, out := treeHash(t, h.root), treeHash(t, outside)
				res := h.approve(r)
				want := target + " changed since the preview was approved; propose the change again."
				if res.Success || res.Error != want {
					t.Fatalf("the twin did not refuse: success=%v error=%q", res.Success, res.Error)
				}
				if treeHash(t, h.root) != inside || treeHash(t, outside) != out {
					t.Fatal("a refused twin changed the tree")
				}
			})
		}
	}
}

// TestTwinCreatesOnlyWhatWasAbsent: a write proposed to create a file
// refuses when anything took the name meanwhile: a link out of the
// workspace (dangling or not), a hard link, a FIFO.
func TestTwinCreatesOnlyWhatWasAbsent(t *testing.T) {
	for _, c := range []struct {
		name   string
		appear func(h *harness, p, outside string)
	}{
		{"a dangling link out", func(h *harness, p, out string) { must(h.t, os.Symlink(filepath.Join(out, "new"), p)) }},
		{"a link to an outside file", func(h *harness, p, out string) {
			must(h.t, os.WriteFile(filepath.Join(out, "config"), nil, 0o600))
			must(h.t, os.Symlink(filepath.Join(out, "config"), p))
		}},
		{"a hard link of an outside file", func(h *harness, p, out string) {
			must(h.t, os.WriteFile(filepath.Join(out, "config"), nil, 0o600))
			must(h.t, os.Link(filepath.Join(out, "config"), p))
		}},
		{"a FIFO", func(h *harness, p, _ string) { must(h.t, syscall.Mkfifo(p, 0o644)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			outside := t.TempDir()
			must(t, os.Mkdir(h.path("repo"), 0o755))
			r := h.propose("write_file", E{"path": "repo/new.txt", "content": "x\n"})
			c.appear(h, h.path("repo/new.txt"), outside)
			// Let a coarse clock tick, so times cannot hide the change.
			time.Sleep(10 * time.Millisecond)
			inside, out := treeHash(t, h.root), treeHash(t, outside)
			res := h.approve(r)
			if res.Success || res.Error != h.path("repo/new.txt")+" changed since the preview was approved; propose the change again." {
				t.Fatalf("the twin did not refuse: success=%v error=%q", res.Success, res.Error)
			}
			if treeHash(t, h.root) != inside || treeHash(t, outside) != out {
				t.Fatal("a refused twin changed the tree")
			}
		})
	}
}

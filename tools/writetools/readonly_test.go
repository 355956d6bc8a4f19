//go:build unix

package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyNeedsAPerson: a file its owner made read-only (no write
// bit for anyone, or none for this process), or one in a directory made
// so, is one the user protected; replacing it by a rename (write_file,
// edit_file, mv or cp over it) or removing it (rm, rm -r of a tree
// holding it) succeeded on any approval, an allowlisted write_file
// included, since neither rename nor unlink needs the file's own write
// permission. Each is now a change only a person approves, and the
// approval says the file is read-only; a writable file next to it is
// approved as before.
func TestReadOnlyNeedsAPerson(t *testing.T) {
	h := newHarness(t)
	h.write("ro.txt", "a\n")
	must(t, os.Chmod(h.path("ro.txt"), 0o444))
	h.write("tree/sub/ro.txt", "b\n")
	must(t, os.Chmod(h.path("tree/sub/ro.txt"), 0o400))
	h.write("rodir/f.txt", "c\n")
	must(t, os.Chmod(h.path("rodir"), 0o555))
	t.Cleanup(func() { os.Chmod(h.path("rodir"), 0o755) })
	h.write("src.txt", "s\n")
	h.write("rw.txt", "w\n")

	ins := []any{E{"type": "insert", "line": 0, "content": "x"}}
	for _, c := range []struct {
		tool, shown string
		args        E
	}{
		{"write_file", "ro.txt", E{"path": "ro.txt", "content": "new\n"}},
		{"edit_file", "ro.txt", E{"path": "ro.txt", "edits": ins}},
		{"rm", "ro.txt", E{"path": "ro.txt"}},
		{"rm", "tree/sub/ro.txt", E{"path": "tree", "recursive": true}},
		{"mv", "ro.txt", E{"source": "src.txt", "destination": "ro.txt", "force": true}},
		{"cp", "ro.txt", E{"source": "src.txt", "destination": "ro.txt", "force": true}},
		{"mv", "tree/sub/ro.txt", E{"source": "src.txt", "destination": "tree", "force": true}},
		{"write_file", "rodir", E{"path": "rodir/new.txt", "content": "n\n"}},
		{"write_file", "rodir", E{"path": "rodir/f.txt", "content": "n\n"}},
		{"rm", "rodir", E{"path": "rodir/f.txt"}},
		{"mv", "rodir", E{"source": "rodir/f.txt", "destination": "moved.txt"}},
		{"mkdir", "rodir", E{"path": "rodir/d"}},
	} {
		r := h.propose(c.tool, c.args)
		why := r.Approval.HumanOnly
		if why == "" || !strings.Contains(why, "read-only") || !strings.Contains(why, h.path(c.shown)) {
			t.Errorf("%s %v: approval by anyone (human-only %q)", c.tool, c.args, why)
		}
		if !strings.Contains(r.Approval.Message, "read-only") {
			t.Errorf("%s %v: the message does not say it is read-only: %s", c.tool, c.args, r.Approval.Message)
		}
	}
	for _, c := range []struct {
		tool string
		args E
	}{
		{"write_file", E{"path": "rw.txt", "content": "new\n"}},
		{"edit_file", E{"path": "rw.txt", "edits": ins}},
		{"rm", E{"path": "rw.txt"}},
		{"cp", E{"source": "ro.txt", "destination": "copy.txt"}},
		{"mv", E{"source": "rw.txt", "destination": "tree/rw.txt"}},
	} {
		if r := h.propose(c.tool, c.args); r.Approval.HumanOnly != "" {
			t.Errorf("%s %v: human-only for a writable file: %s", c.tool, c.args, r.Approval.HumanOnly)
		}
	}

	// A person may still approve it: the file is written, and stays
	// read-only, as it was.
	res := h.approve(h.propose("write_file", E{"path": "ro.txt", "content": "approved\n"}))
	if !res.Success || h.read("ro.txt") != "approved\n" {
		t.Fatalf("an approved write of a read-only file: %+v", res)
	}
	if fi, err := os.Stat(h.path("ro.txt")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("mode after the write: %v %v", fi.Mode(), err)
	}

	// Made read-only after the preview: the approval was for a file
	// anyone could approve writing.
	p := h.propose("write_file", E{"path": "rw.txt", "content": "late\n"})
	must(t, os.Chmod(h.path("rw.txt"), 0o444))
	if res := h.approve(p); res.Success || !strings.Contains(res.Error, "changed since the preview") {
		t.Errorf("a file made read-only after its preview: %+v", res)
	}
}

// TestReplaceKeepsTheOwner: a file replaced by a write or an edit keeps
// its owner and group, not the process's (as root, a user's file became
// root's, and the user could no longer write it).
func TestReplaceKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	h := newHarness(t)
	for _, tool := range []string{"write_file", "edit_file"} {
		p := h.write(tool+".txt", "a\n")
		must(t, os.Chown(p, 4321, 4322))
		args := E{"path": filepath.Base(p), "content": "b\n"}
		if tool == "edit_file" {
			args = E{"path": filepath.Base(p), "edits": []any{E{"type": "insert", "line": 0, "content": "x"}}}
		}
		if res := h.approve(h.propose(tool, args)); !res.Success {
			t.Fatalf("%s: %+v", tool, res)
		}
		fi, err := os.Stat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 4321 || st.Gid != 4322 {
			t.Errorf("%s: owner %d:%d after the write, want 4321:4322", tool, st.Uid, st.Gid)
		}
	}
}

// TestCopyOverAFileKeepsItsOwnerAndMode: cp over an existing file gives
// the file new content, as cp(1) does, and keeps what the file was: its
// owner, group and permission bits. Before, the copy replaced it with
// the process's own file and the source's mode (as root, a user's 0600
// file became root's, and a 0644 one executable).
func TestCopyOverAFileKeepsItsOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	h := newHarness(t)
	src := h.write("src.sh", "#!/bin/sh\n")
	must(t, os.Chmod(src, 0o755))
	dst := h.write("dst.txt", "old\n")
	must(t, os.Chown(dst, 4321, 4322))
	must(t, os.Chmod(dst, 0o640))
	if r := h.approve(h.propose("cp", E{"source": "src.sh", "destination": "dst.txt", "force": true})); !r.Success {
		t.Fatalf("cp: %+v", r)
	}
	fi, err := os.Stat(dst)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	if h.read("dst.txt") != "#!/bin/sh\n" || st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != 0o640 {
		t.Errorf("after cp: %q, owner %d:%d, mode %v; want the new content with 4321:4322 and 0640", h.read("dst.txt"), st.Uid, st.Gid, fi.Mode())
	}
	// A new destination is the source's copy, mode and all.
	if r := h.approve(h.propose("cp", E{"source": "src.sh", "destination": "new.sh"})); !r.Success {
		t.Fatalf("cp: %+v", r)
	}
	if fi, err := os.Stat(h.path("new.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("a new copy: %v %v", fi.Mode(), err)
	}
}

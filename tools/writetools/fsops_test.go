package writetools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMkdir(t *testing.T) {
	t.Run("messages", func(t *testing.T) {
		h := newHarness(t)
		h.write("file", "x")
		must(t, os.Mkdir(h.path("dir"), 0o755))
		tests := []struct {
			args         E
			msg, success string
			fail         string
		}{
			{args: E{"path": "new"}, msg: "About to create directory: <root>/new (with parents)"},
			{args: E{"path": "new", "recursive": true}, msg: "About to create directory: <root>/new (with parents)"},
			{args: E{"path": "new", "recursive": false}, msg: "About to create directory: <root>/new"},
			{args: E{"path": "dir"}, success: "Directory already exists: <root>/dir"},
			{args: E{"path": "file"}, fail: "Path exists but is not a directory: <root>/file\n\nCannot create directory here."},
			{args: E{"path": "a/b"}, fail: "Cannot create directory '<root>/a/b': parent directory '<root>/a' does not exist. Use recursive=true to create parent directories."},
			{args: E{"path": "file/sub"}, fail: "Cannot create directory '<root>/file/sub': '<root>/file' is not a directory."},
		}
		for _, tt := range tests {
			before := treeHash(t, h.root)
			r := h.call("mkdir", tt.args)
			if treeHash(t, h.root) != before {
				t.Fatalf("%v: propose mutated", tt.args)
			}
			sub := func(s string) string { return strings.ReplaceAll(s, "<root>", h.root) }
			switch {
			case tt.msg != "":
				if r.Approval == nil || r.Approval.Message != sub(tt.msg) || r.Approval.PreviewDiff != "" {
					t.Fatalf("%v: %+v", tt.args, r)
				}
			case tt.success != "":
				if !r.Success || r.Approval != nil || r.Value != sub(tt.success) {
					t.Fatalf("%v: %+v", tt.args, r)
				}
			default:
				if r.Success || r.Approval != nil || r.Error != sub(tt.fail) {
					t.Fatalf("%v: %+v", tt.args, r)
				}
			}
		}
	})
	t.Run("execute", func(t *testing.T) {
		h := newHarness(t)
		res := h.approve(h.propose("mkdir", E{"path": "made"}))
		if !res.Success || res.Value != "Directory created: "+h.path("made") {
			t.Fatalf("%+v", res)
		}
		if fi, err := os.Stat(h.path("made")); err != nil || !fi.IsDir() {
			t.Fatal("not created")
		}
	})
	t.Run("a file appeared", func(t *testing.T) {
		h := newHarness(t)
		r := h.propose("mkdir", E{"path": "x"})
		h.write("x", "")
		res := h.approve(r)
		if res.Error != "Cannot create directory '"+h.path("x")+"': a file already exists at this path" {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("parent swapped for a link", func(t *testing.T) {
		h := newHarness(t)
		must(t, os.Mkdir(h.path("p"), 0o755))
		r := h.propose("mkdir", E{"path": "p/x"})
		must(t, os.Rename(h.path("p"), h.path("q")))
		must(t, os.Symlink(t.TempDir(), h.path("p")))
		res := h.approve(r)
		if res.Error != h.path("p/x")+" changed since the preview was approved; propose the change again." {
			t.Fatalf("%+v", res)
		}
	})
}

func TestRm(t *testing.T) {
	t.Run("messages", func(t *testing.T) {
		h := newHarness(t)
		h.write("f", "x")
		h.write("d/inner", "y")
		must(t, os.Symlink("f", h.path("ln")))
		must(t, os.Symlink("nowhere", h.path("dangling")))
		must(t, os.Mkdir(h.path("empty"), 0o755))
		tests := []struct {
			args      E
			msg, fail string
		}{
			{args: E{"path": "f"}, msg: "About to delete: <root>/f\n\nThis removes the file <root>/f (1 byte).\n\nThis action may be irreversible."},
			{args: E{"path": "d", "recursive": true}, msg: "About to delete recursively: <root>/d\n\nThis removes the directory <root>/d and everything in it: 1 file, 0 directories, 1 byte.\n\nThis action may be irreversible."},
			{args: E{"path": "ln"}, msg: "About to delete: <root>/ln\n\nThis removes the symbolic link <root>/ln (pointing to f); what it points to is kept.\n\nThis action may be irreversible."},
			{args: E{"path": "empty", "recursive": true}, msg: "About to delete recursively: <root>/empty\n\nThis removes the empty directory <root>/empty.\n\nThis action may be irreversible."},
			{args: E{"path": "dangling"}, fail: "Path not found: <root>/dangling"},
			{args: E{"path": "d"}, fail: "Path is a directory, use recursive: true"},
			{args: E{"path": "/", "recursive": true}, fail: "Refusing to remove critical path: /"},
			{args: E{"path": "~", "recursive": true}, fail: "Refusing to remove critical path: <root>/home"},
			{args: E{"path": "home/../home/", "recursive": true}, fail: "Refusing to remove critical path: <root>/home"},
			{args: E{"path": "/nonexistent-jazz-path"}, fail: "Path not found: /nonexistent-jazz-path"},
		}
		for _, tt := range tests {
			before := treeHash(t, h.root)
			r := h.call("rm", tt.args)
			if treeHash(t, h.root) != before {
				t.Fatalf("%v: propose mutated", tt.args)
			}
			sub := func(s string) string { return strings.ReplaceAll(s, "<root>", h.root) }
			if tt.msg != "" {
				if r.Approval == nil || r.Approval.Message != sub(tt.msg) {
					t.Fatalf("%v: %+v", tt.args, r)
				}
			} else if r.Approval != nil || r.Error != sub(tt.fail) {
				t.Fatalf("%v: %+v", tt.args, r)
			}
		}
	})
	t.Run("remove file and tree", func(t *testing.T) {
		h := newHarness(t)
		h.write("f", "x")
		h.write("d/e/g", "y")
		for _, args := range []E{{"path": "f"}, {"path": "d", "recursive": true}} {
			res := h.approve(h.propose("rm", args))
			p := h.path(args["path"].(string))
			if !res.Success || res.Value != "Removed: "+p {
				t.Fatalf("%+v", res)
			}
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Fatalf("%s still there", p)
			}
		}
	})
	t.Run("link removed, target kept", func(t *testing.T) {
		h := newHarness(t)
		target := h.write("target", "keep")
		must(t, os.Symlink(target, h.path("link")))
		if res := h.approve(h.propose("rm", E{"path": "link"})); !res.Success {
			t.Fatalf("%+v", res)
		}
		if h.read("target") != "keep" {
			t.Fatal("target gone")
		}
	})
	t.Run("refused after change", func(t *testing.T) {
		for name, change := range map[string]func(h *harness){
			"file rewritten":     func(h *harness) { h.write("d/a", "other") },
			"file added to tree": func(h *harness) { h.write("d/new", "") },
			"tree swapped by link": func(h *harness) {
				must(h.t, os.Rename(h.path("d"), h.path("d2")))
				must(h.t, os.Symlink(h.path("d2"), h.path("d")))
			},
		} {
			t.Run(name, func(t *testing.T) {
				h := newHarness(t)
				h.write("d/a", "x")
				r := h.propose("rm", E{"path": "d", "recursive": true})
				change(h)
				snap := treeHash(t, h.root)
				res := h.approve(r)
				if res.Error != h.path("d")+" changed since the preview was approved; propose the change again." {
					t.Fatalf("%+v", res)
				}
				if treeHash(t, h.root) != snap {
					t.Fatal("removed anyway")
				}
			})
		}
	})
}

func TestMvCp(t *testing.T) {
	t.Run("messages", func(t *testing.T) {
		h := newHarness(t)
		h.write("src/f", "x")
		h.write("other", "o")
		tests := []struct {
			tool      string
			args      E
			msg, fail string
		}{
			{"mv", E{"source": "src", "destination": "dst"}, "About to move: <root>/src\n       to: <root>/dst", ""},
			{"cp", E{"source": "src", "destination": "dst", "force": true}, "About to copy: <root>/src\n       to: <root>/dst", ""},
			{"cp", E{"source": "other", "destination": "src", "force": true}, "About to copy: <root>/other\n       to: <root>/src\n\nThis replaces the directory <root>/src and everything in it: 1 file, 0 directories, 1 byte.", ""},
			{"mv", E{"source": "other", "destination": "src/f", "force": true}, "About to move: <root>/other\n       to: <root>/src/f\n\nThis replaces the file <root>/src/f (1 byte).", ""},
			{"mv", E{"source": "src/f", "destination": "src", "force": true}, "", "Destination contains the source: <root>/src; replacing it would destroy the source."},
			{"cp", E{"source": "src", "destination": "~", "force": true}, "", "Refusing to replace critical path: <root>/home"},
			{"mv", E{"source": "src", "destination": "src/in"}, "", "Destination must not be within source: <root>/src/in"},
			{"cp", E{"source": "src", "destination": "./src"}, "", "Destination must not be within source: <root>/src"},
			{"cp", E{"source": "src", "destination": "srcx"}, "About to copy: <root>/src\n       to: <root>/srcx", ""},
			{"mv", E{"source": "other", "destination": "src/f"}, "", "Destination exists: <root>/src/f. Use force: true to overwrite."},
			{"mv", E{"source": "~", "destination": "elsewhere"}, "", "Refusing to move critical path: <root>/home"},
			{"mv", E{"source": "nope", "destination": "x"}, "", "Path not found: <root>/nope"},
		}
		for _, tt := range tests {
			before := treeHash(t, h.root)
			r := h.call(tt.tool, tt.args)
			if treeHash(t, h.root) != before {
				t.Fatalf("%v: propose mutated", tt.args)
			}
			sub := func(s string) string { return strings.ReplaceAll(s, "<root>", h.root) }
			if tt.msg != "" {
				if r.Approval == nil || r.Approval.Message != sub(tt.msg) {
					t.Fatalf("%s %v: %+v", tt.tool, tt.args, r)
				}
			} else if r.Approval != nil || r.Error != sub(tt.fail) {
				t.Fatalf("%s %v: %q", tt.tool, tt.args, r.Error)
			}
		}
	})
	t.Run("move and copy", func(t *testing.T) {
		h := newHarness(t)
		h.write("tree/a", "A")
		h.write("tree/sub/b", "B")
		must(t, os.Chmod(h.path("tree/a"), 0o751))
		must(t, os.Symlink("a", h.path("tree/ln")))
		res := h.approve(h.propose("cp", E{"source": "tree", "destination": "copy"}))
		if res.Value != "Copied: "+h.path("tree")+" → "+h.path("copy") {
			t.Fatalf("%+v", res)
		}
		if h.read("copy/a") != "A" || h.read("copy/sub/b") != "B" || h.read("tree/a") != "A" {
			t.Fatal("copy content")
		}
		if fi, _ := os.Stat(h.path("copy/a")); fi.Mode().Perm() != 0o751 {
			t.Fatalf("mode %v", fi.Mode())
		}
		if l, _ := os.Readlink(h.path("copy/ln")); l != "a" {
			t.Fatalf("link %q", l)
		}
		res = h.approve(h.propose("mv", E{"source": "tree", "destination": "moved"}))
		if res.Value != "Moved: "+h.path("tree")+" → "+h.path("moved") {
			t.Fatalf("%+v", res)
		}
		if _, err := os.Stat(h.path("tree")); !os.IsNotExist(err) || h.read("moved/sub/b") != "B" {
			t.Fatal("move")
		}
	})
	t.Run("force replaces destination", func(t *testing.T) {
		h := newHarness(t)
		h.write("s", "new")
		h.write("d/old", "old")
		if res := h.approve(h.propose("cp", E{"source": "s", "destination": "d", "force": true})); !res.Success {
			t.Fatalf("%+v", res)
		}
		if h.read("d") != "new" {
			t.Fatal("not replaced")
		}
	})
	t.Run("refused after change", func(t *testing.T) {
		h := newHarness(t)
		h.write("s", "1")
		r := h.propose("mv", E{"source": "s", "destination": "d"})
		h.write("d", "appeared")
		if res := h.approve(r); res.Error != h.path("d")+" changed since the preview was approved; propose the change again." {
			t.Fatalf("%+v", res)
		}
		r = h.propose("cp", E{"source": "s", "destination": "e"})
		h.write("s", "2")
		if res := h.approve(r); res.Error != h.path("s")+" changed since the preview was approved; propose the change again." {
			t.Fatalf("%+v", res)
		}
		if h.read("d") != "appeared" {
			t.Fatal("overwritten")
		}
		if _, err := os.Stat(filepath.Join(h.root, "e")); !os.IsNotExist(err) {
			t.Fatal("copied anyway")
		}
	})
}
